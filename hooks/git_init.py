"""Copier task 1: make the new project a git repository on branch `main` (no-op if it already is one)."""

from pathlib import Path

from _common import run

if not Path(".git").exists():
    run(["git", "init", "--quiet", "--initial-branch=main"], what="git init")
