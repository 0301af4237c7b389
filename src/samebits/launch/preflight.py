"""Before launching jobs: a job checks its commit out from the remote, so the commit must exist there.

Launcher backends (local processes, Slurm) live in this folder; they start `jobs/job.sh` with a commit SHA, a
run name and overrides, and never import the training loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import git
from ..core.provenance import git_state


def launch_problems(root: Path, state: dict[str, Any] | None = None) -> list[str]:
    """Why the commit at `root` cannot be launched as a job yet, one line each: a job checks out a commit from
    the remote, so it must be committed (a clean tree) and pushed. `state`: `git_state(root)`, if known."""
    state = state or git_state(root)
    if state["commit"] is None:
        return [f"{root} is not a git checkout: jobs run commits, so commit your project first"]
    found = []
    if state["dirty"]:
        found.append("the working tree has uncommitted changes: commit (or stash) them, then launch")
    if state["remote_url"] is None:
        found.append("the repository has no remote `origin`: add one (git remote add origin URL) and push")
    elif not git.output(root, "branch", "--remotes", "--contains", state["commit"]):
        found.append(f"commit {state['commit'][:12]} is not on any remote branch: git push, then launch")
    return found
