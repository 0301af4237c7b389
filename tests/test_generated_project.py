"""The generated project works as a new user finds it: its own nox sessions and pre-commit hooks pass, and `uv run`
trains. Its reproducibility proof is tested in test_proof.py.

These install the project's locked environment (torch included: about 2.6 GB into uv's cache the first time,
hard-linked afterwards) and start many training processes, so they are marked slow.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from helpers.commands import run
from helpers.generation import DEFAULT_PACKAGE
from helpers.git import GIT_FILE

pytestmark = pytest.mark.slow


def test_generated_tests_and_lint_pass(default_project: Path) -> None:
    run(default_project, "nox", "--non-interactive", "-s", "lint", "tests", timeout=2400)


def test_lint_fails_on_a_dependency_added_without_relocking(default_project: Path, tmp_path: Path) -> None:
    project = tmp_path / "unlocked"
    subprocess.run(
        [*GIT_FILE, "clone", "--quiet", "--recurse-submodules", str(default_project), str(project)], check=True
    )
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"torch>=2.4",', '"torch>=2.4",\n    "rich>=13",'))
    done = run(project, "nox", "--non-interactive", "-s", "lint", expect=1)
    assert "uv lock --check" in done.stdout + done.stderr
    assert "needs to be updated" in done.stdout + done.stderr


def test_pre_commit_passes_on_the_first_commit_and_catches_secrets_and_conflicts(
    default_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "hooks"
    subprocess.run(
        [*GIT_FILE, "clone", "--quiet", "--recurse-submodules", str(default_project), str(project)], check=True
    )
    pre_commit = ["uv", "run", "--frozen", "pre-commit", "run", "--all-files"]
    run(project, *pre_commit)
    fake_key = 'api_key = "sk_live_51HBx7bQz8sQk3nJ4pLr9tVwXy2mA"\n'
    planted = {
        "settings.py": (fake_key, "no secrets (API keys, tokens, passwords)"),
        "notes.md": ("<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n", "no merge conflict markers"),
    }
    for name, (content, hook) in planted.items():
        (project / name).write_text(content)
        subprocess.run(["git", "add", name], cwd=project, check=True)
        done = run(project, *pre_commit, expect=1)
        assert re.search(rf"^{re.escape(hook)}\.+Failed$", done.stdout, flags=re.MULTILINE), done.stdout
        subprocess.run(["git", "rm", "--quiet", "--force", name], cwd=project, check=True)


def test_new_user_trains_with_uv_run(default_project: Path) -> None:
    run(default_project, "uv", "run", "--frozen", DEFAULT_PACKAGE, "train")  # the console command: python -m's twin
    (run_dir,) = (default_project / "runs" / "dev").iterdir()
    assert {path.name for path in run_dir.iterdir()} >= {"config.yaml", "metrics.jsonl", "summary.json", "checkpoints"}
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["val/acc"] >= 0.90
    library = json.loads((run_dir / "provenance.json").read_text())["library"]
    pinned = subprocess.run(["git", "rev-parse", "HEAD:external/samebits"], cwd=default_project, capture_output=True)
    assert library["commit"] == pinned.stdout.decode().strip() and library["dirty"] is False


def test_a_patch_in_the_library_marks_the_run_dirty(default_project: Path, tmp_path: Path) -> None:
    patched = default_project / "external/samebits/src/samebits/__init__.py"
    original = patched.read_text()
    patched.write_text(original + "# a local patch\n")
    try:
        done = run(default_project, "nox", "--non-interactive", "-s", "deps", expect=1)
        assert "external/samebits" in done.stdout + done.stderr
        train = ["uv", "run", "--frozen", "python", "-m", f"{DEFAULT_PACKAGE}.train", "trainer.max_steps=20"]
        run(
            default_project, "env", f"RUNS_DIR={tmp_path}", *train, "sched.warmup_steps=5", "trainer.progress_bar=false"
        )
    finally:
        patched.write_text(original)
    (run_dir,) = (tmp_path / "dev").iterdir()
    recorded = json.loads((run_dir / "provenance.json").read_text())
    assert recorded["git"]["dirty"] is True and recorded["library"]["dirty"] is True
