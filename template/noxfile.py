"""Project sessions. Each installs the exact environment of `uv.lock` (`uv sync --frozen`) into its own venv.

nox -s tests             the test suite (pytest)
nox -s lint              ruff check, ruff format --check, and uv lock --check (pyproject.toml edited, not locked?)
nox -s reproducibility   prove that the same config gives the same bits (-- --device cuda on a GPU)
nox -s deps              is every external/ submodule checked out at its pinned SHA, without local changes?
"""

from __future__ import annotations

import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["lint", "tests"]

PACKAGE = nox.project.load_toml("pyproject.toml")["project"]["name"].replace("-", "_")
PYTHON = Path(".python-version").read_text().strip()


def install_locked(session: nox.Session) -> None:
    """Install the project and its dev group exactly as uv.lock pins them (the lock is never re-resolved)."""
    session.run_install(
        "uv", "sync", "--frozen", "--all-groups", env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}
    )


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    install_locked(session)
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.run("uv", "lock", "--check", external=True)  # fails if pyproject.toml changed without `uv lock`
    install_locked(session)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def reproducibility(session: nox.Session) -> None:
    install_locked(session)
    session.run("python", "-m", f"{PACKAGE}.reproducibility", *session.posargs)


@nox.session(python=False)
def deps(session: nox.Session) -> None:
    # Only git and the standard library: it runs even before the locked environment can be installed.
    session.run(sys.executable, f"src/{PACKAGE}/deps.py")
