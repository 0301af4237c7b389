"""Sessions for working on the template.

nox -s reproducibility   generate a default project into a temporary folder and run its own proof
nox -s tests             the template's test suite (generation matrix, hooks, validators, generated sessions)
nox -s lint              ruff on the template repository, including the plain .py files in template/
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).resolve().parent
DEV = nox.project.dependency_groups(nox.project.load_toml(ROOT / "pyproject.toml"), "dev")


@nox.session
def tests(session: nox.Session) -> None:
    session.install(*DEV)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(*DEV)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def reproducibility(session: nox.Session) -> None:
    """The main job: a project generated with default answers proves that it trains bit for bit repeatably."""
    session.install(*DEV)
    with tempfile.TemporaryDirectory(prefix="template-reproducibility-") as scratch:
        project = Path(scratch) / "my-exp"
        session.log(f"generating a default project from {ROOT} into {project}")
        session.run("copier", "copy", "--trust", "--defaults", "--quiet", "--vcs-ref", "HEAD", str(ROOT), str(project))
        session.chdir(project)
        session.run("nox", "--non-interactive", "-s", "reproducibility", "--", *session.posargs)
