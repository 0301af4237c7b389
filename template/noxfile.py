"""Project sessions. Each installs the exact environment of `uv.lock` (`uv sync --frozen`) into its own venv.

nox                      lint, tests and quick_proof: what to run before every commit
nox -s tests             the test suite (pytest), test files spread over the CPU cores (-- -n 0: one process)
nox -s lint              ruff check, ruff format --check, and uv lock --check (pyproject.toml edited, not locked?)
nox -s quick_proof       proofs 1 and 2 of the reproducibility proof: same config twice, and a mid-epoch resume
nox -s reproducibility   prove that the same config gives the same bits (-- --device cuda on a GPU)
nox -s deps              is every external/ submodule checked out at its pinned SHA, without local changes?
nox -s template_version  is a newer version of the template out? (then: copier update --trust --defaults)
nox -s docker_lint       hadolint on the Dockerfile (warnings and errors)
nox -s docker            build the image, train briefly in it and on the host, and compare params_sha256
                         (-- --build-arg BASE_IMAGE=... and other `build` options are passed on)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
# The quick proof is a default too: a change to the loop is checked the way the full proof checks it.
nox.options.sessions = ["lint", "tests", "quick_proof"]
# Each session's venv is kept between invocations: `uv sync --frozen` makes it exactly the lock every time
# (removing whatever else is in it), so a new venv would only cost the bytecode compilation again.
nox.options.reuse_venv = "yes"

PACKAGE = nox.project.load_toml("pyproject.toml")["project"]["name"].replace("-", "_")
PYTHON = Path(".python-version").read_text().strip()
LIBRARY = "external/samebits/src/samebits"  # the pinned library, whose scripts need no installed environment


def require_library(session: nox.Session) -> None:
    """In a clone made without --recurse-submodules the library's folder is empty, and uv's error would not say so."""
    if not Path(LIBRARY).is_dir():
        session.error(
            "external/samebits is empty: run `git submodule update --init` (or clone with --recurse-submodules)"
        )


def install_locked(session: nox.Session, extras: bool = False) -> None:
    """Install the project and its dev group exactly as uv.lock pins them (the lock is never re-resolved); with
    `extras`, the optional ones too (MLflow), which only the tests need.

    Bytecode is compiled once here (slow for a new venv, quick after that): where PYTHONDONTWRITEBYTECODE is set,
    every process would otherwise recompile torch as it imports it. The figures are in the samebits library:
    external/samebits/docs/decisions/0011-bytecode-compiled-once.md.
    """
    require_library(session)
    env = {"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}
    extra = ["--all-extras"] if extras else []
    session.run_install("uv", "sync", "--frozen", "--all-groups", *extra, "--compile-bytecode", env=env)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    install_locked(session, extras=True)
    # Most tests wait on a training process of one thread: one worker per core keeps every core busy. A test file
    # stays on one worker (loadfile), so its module fixtures are built once.
    session.run("pytest", "--numprocesses=auto", "--dist=loadfile", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    require_library(session)
    session.run("uv", "lock", "--check", external=True)  # fails if pyproject.toml changed without `uv lock`
    install_locked(session)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def reproducibility(session: nox.Session) -> None:
    install_locked(session)
    session.run("python", "-m", PACKAGE, "proof", *session.posargs)


@nox.session(python=PYTHON)
def quick_proof(session: nox.Session) -> None:
    """The first two proofs, a quick check; `nox -s reproducibility` runs all eight."""
    install_locked(session)
    session.run("python", "-m", PACKAGE, "proof", "--only", "1,2", *session.posargs)


@nox.session(python=False)
def deps(session: nox.Session) -> None:
    # Only git and the standard library: it runs even before the locked environment can be installed.
    session.run(sys.executable, f"{LIBRARY}/core/deps.py")


@nox.session(python=False)
def template_version(session: nox.Session) -> None:
    """Is a newer template version out? Lists the tags of the template's source (in .copier-answers.yml)."""
    session.run(sys.executable, f"{LIBRARY}/core/template_version.py")


@nox.session(python=PYTHON)
def docker_lint(session: nox.Session) -> None:
    install_locked(session)
    session.run("hadolint", "--failure-threshold", "warning", "Dockerfile")


# A short run, long enough to cross a checkpoint and an evaluation.
SHORT_RUN = ["trainer.max_steps=120", "sched.warmup_steps=10", "trainer.progress_bar=false"]


@nox.session(python=PYTHON)
def docker(session: nox.Session) -> None:
    """The same lock must give the same bits: one short run in the image, one on the host, same params_sha256."""
    engine = _container_engine(session)
    image = f"localhost/{PACKAGE}:nox"
    session.run(engine, "build", "--tag", image, *session.posargs, ".", external=True)
    install_locked(session)
    with tempfile.TemporaryDirectory(prefix="docker-") as scratch:
        inside, host = Path(scratch, "inside"), Path(scratch, "host")
        inside.mkdir()
        inside.chmod(0o777)  # the image runs as uid 10001
        session.run(engine, "run", "--rm", "--volume", f"{inside}:/runs", image, *SHORT_RUN, external=True)
        session.run("python", "-m", f"{PACKAGE}.train", *SHORT_RUN, env={"RUNS_DIR": str(host)})
        hashes = {where: _params_sha256(folder) for where, folder in (("image", inside), ("host", host))}
    for where, digest in hashes.items():
        session.log(f"params_sha256 {where:<5} {digest}")
    if hashes["image"] != hashes["host"]:
        session.error("the image and the host trained different bits from the same lock")
    session.log("identical: the image reproduces the host run bit for bit")


def _container_engine(session: nox.Session) -> str:
    """docker if its daemon answers, else podman."""
    for engine in ("docker", "podman"):
        if shutil.which(engine) and subprocess.run([engine, "info"], capture_output=True).returncode == 0:
            return engine
    session.error("neither docker nor podman is usable here: install one (and start the docker daemon)")


def _params_sha256(runs_dir: Path) -> str:
    (summary,) = runs_dir.glob("*/*/summary.json")
    return json.loads(summary.read_text())["params_sha256"]
