"""Throwaway template repositories with real, tagged versions, built from this repository's own history.

- v0.1.0 is commit `FLAT_LAYOUT` (tagged v0.1.0 here): the last one with the flat module layout. It is found by
  SHA, since a clone may not carry tags.
- v0.2.0 is this checkout's working tree (uncommitted changes included), as Copier itself would take it.
- v0.3.0 is v0.2.0 plus the changes a template release makes (`THIRD_RELEASE`, `THIRD_RELEASE_REMOVES`): a new
  trainer option, a changed default in train.yaml, a new dependency, a new file, a removed file, and an edit to
  the model's config on the line that the update tests also edit as the user.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import IDENTITY, ROOT, git

FLAT_LAYOUT = "ba4a214e2534eb63fb0e15bf20eda1db955034f2"
PACKAGE_DIR = "template/src/{{ package_name }}"

# v0.3.0's edits: (path, text to find, replacement). A None "find" writes a new file.
THIRD_RELEASE = [
    (f"{PACKAGE_DIR}/core/config.py", "    allow_code_change: bool = False\n",
     "    allow_code_change: bool = False\n    log_grad_norm: bool = False\n"),
    ("template/configs/trainer/default.yaml", "allow_code_change: false",
     "log_grad_norm: false       # also log the gradient norm\nallow_code_change: false"),
    ("template/configs/train.yaml", "tags: [exploratory]", "tags: [exploratory, template-v0.3]"),
    ("template/pyproject.toml.jinja", '    "tqdm>=4.66",\n', '    "tqdm>=4.66",\n    "rich>=13",\n'),
    ("template/configs/model/mlp.yaml", "hidden_sizes: [128, 128]", "hidden_sizes: [64, 64]"),
    ("template/docs/faq.md", None, "# Questions\n\nAsk them in the issue tracker.\n"),
]  # fmt: skip
THIRD_RELEASE_REMOVES = ["template/configs/optim/sgd.yaml"]


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
    """Make `repo` a template repository with the three tagged versions; return {version: commit}."""
    found = subprocess.run(["git", "cat-file", "-e", f"{FLAT_LAYOUT}^{{commit}}"], cwd=ROOT, capture_output=True)
    if found.returncode != 0:
        pytest.fail(f"commit {FLAT_LAYOUT[:7]} (template v0.1.0) is not in this clone: fetch the full history")
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main"], cwd=repo, check=True)
    archive = subprocess.run(["git", "archive", FLAT_LAYOUT], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x"], cwd=repo, input=archive, check=True)
    commits = {"v0.1.0": commit_tree(repo, "v0.1.0")}

    clear(repo)
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not part of it
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    commits["v0.2.0"] = commit_tree(repo, "v0.2.0")

    for name, find, replacement in THIRD_RELEASE:
        path = repo / name
        if find is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(replacement)
            continue
        text = path.read_text()
        assert text.count(find) == 1, f"{name}: {find!r} is not there exactly once"
        path.write_text(text.replace(find, replacement))
    for name in THIRD_RELEASE_REMOVES:
        (repo / name).unlink()
    commits["v0.3.0"] = commit_tree(repo, "v0.3.0")
    return commits
