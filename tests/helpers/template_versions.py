"""Throwaway template repositories with real, tagged versions, built from this repository's own history.

- v0.1.0 is commit `FLAT_LAYOUT`: the last one with the flat module layout.
- v0.2.0 is commit `COPIED_LAYOUT`: the last one that copied the loop and the machinery into each project.
- v0.3.0 is this checkout's working tree (uncommitted changes included), as Copier itself would take it: the
  machinery is the samebits library, pinned in each project as external/samebits.
- v0.4.0 is v0.3.0 plus the changes a template release makes (`FOURTH_RELEASE`, `FOURTH_RELEASE_REMOVES`): a new
  trainer option (in the library), a changed default in train.yaml, a new dependency, a new file, a removed file,
  and an edit to the model's config on the line that the update tests also edit as the user.
Old versions are found by SHA, since a clone may not carry tags.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .generation import ROOT
from .git import IDENTITY, git

FLAT_LAYOUT = "ba4a214e2534eb63fb0e15bf20eda1db955034f2"
COPIED_LAYOUT = "9f604f73908639a7a9b93ef9f1d92990971386ec"
PACKAGE_DIR = "template/src/{{ package_name }}"

# v0.4.0's edits: (path, text to find, replacement). A None "find" writes a new file.
FOURTH_RELEASE = [
    ("src/samebits/core/config.py", "    allow_code_change: bool = False\n",
     "    allow_code_change: bool = False\n    log_grad_norm: bool = False\n"),
    ("template/configs/trainer/default.yaml", "allow_code_change: false",
     "log_grad_norm: false       # also log the gradient norm\nallow_code_change: false"),
    ("template/configs/train.yaml", "tags: [exploratory]", "tags: [exploratory, template-v0.3]"),
    ("template/pyproject.toml.jinja", '    "torch>=2.4",\n', '    "torch>=2.4",\n    "rich>=13",\n'),
    ("template/configs/model/mlp.yaml", "hidden_sizes: [128, 128]", "hidden_sizes: [64, 64]"),
    ("template/docs/faq.md", None, "# Questions\n\nAsk them in the issue tracker.\n"),
]  # fmt: skip
FOURTH_RELEASE_REMOVES = ["template/configs/optim/sgd.yaml"]


def commit_tree(repo: Path, version: str) -> str:
    subprocess.run(["git", "add", "--all"], cwd=repo, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "--allow-empty", "-m", version], cwd=repo, check=True)
    subprocess.run(["git", "tag", version], cwd=repo, check=True)
    return git(repo, "rev-parse", "HEAD")


def clear(repo: Path) -> None:
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def build(repo: Path) -> dict[str, str]:
    """Make `repo` a template repository with the four tagged versions; return {version: commit}."""
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main"], cwd=repo, check=True)
    commits = {}
    for version, sha in (("v0.1.0", FLAT_LAYOUT), ("v0.2.0", COPIED_LAYOUT)):
        found = subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=ROOT, capture_output=True)
        if found.returncode != 0:
            pytest.fail(f"commit {sha[:7]} (template {version}) is not in this clone: fetch the full history")
        clear(repo)
        archive = subprocess.run(["git", "archive", sha], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x"], cwd=repo, input=archive, check=True)
        commits[version] = commit_tree(repo, version)

    clear(repo)
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not part of it
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    commits["v0.3.0"] = commit_tree(repo, "v0.3.0")

    for name, find, replacement in FOURTH_RELEASE:
        path = repo / name
        if find is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(replacement)
            continue
        text = path.read_text()
        assert text.count(find) == 1, f"{name}: {find!r} is not there exactly once"
        path.write_text(text.replace(find, replacement))
    for name in FOURTH_RELEASE_REMOVES:
        (repo / name).unlink()
    commits["v0.4.0"] = commit_tree(repo, "v0.4.0")
    return commits
