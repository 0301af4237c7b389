"""A job checks its commit out from the remote: launching needs a clean tree and a pushed commit."""

from __future__ import annotations

import subprocess
from importlib import import_module
from pathlib import Path

preflight = import_module("samebits.launch.preflight")


def test_launch_needs_a_clean_tree_and_a_pushed_commit(tmp_path: Path) -> None:
    project, remote = tmp_path / "project", tmp_path / "remote.git"
    identity = ["-c", "user.name=T", "-c", "user.email=t@e.org"]

    def git(*args: str, cwd: Path = project) -> None:
        subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)

    project.mkdir()
    git("init", "--quiet", "--initial-branch=main")
    (project / "a.txt").write_text("a\n")
    git("add", "a.txt")
    git("commit", "--quiet", "-m", "a")
    assert preflight.launch_problems(project) == [
        "the repository has no remote `origin`: add one (git remote add origin URL) and push"
    ]
    git("init", "--quiet", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote))
    git("push", "--quiet", "--set-upstream", "origin", "main")
    assert preflight.launch_problems(project) == []
    (project / "a.txt").write_text("changed\n")
    assert preflight.launch_problems(project) == [
        "the working tree has uncommitted changes: commit (or stash) them, then launch"
    ]
    git("commit", "--quiet", "-am", "b")
    (problem,) = preflight.launch_problems(project)
    assert problem.endswith("is not on any remote branch: git push, then launch")
