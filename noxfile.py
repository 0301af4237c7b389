"""Sessions for working on the template.

nox -s reproducibility   generate a default project into a temporary folder and run its own proof
nox -s tests             the template's test suite (generation matrix, hooks, validators, generated sessions)
nox -s lint              ruff on the template repository, including the plain .py files in template/
nox -s examples          generate each example project (examples/), train it briefly and run its proof
                         (-- --quick: only proofs 1 and 2)
nox -s bench             generate a default project and run the benchmarks (benchmarks/) in it; they print figures
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).resolve().parent
DEV = nox.project.dependency_groups(nox.project.load_toml(ROOT / "pyproject.toml"), "dev")
# Commands in a generated project run as from a user's shell: without this session's venv variables, with which
# `uv run` there would sync the project's lock into this session's venv (and remove copier from it).
OUTSIDE_THIS_VENV = ["env", "-u", "VIRTUAL_ENV", "-u", "UV_PROJECT_ENVIRONMENT", "-u", "UV_PYTHON"]


@nox.session
def tests(session: nox.Session) -> None:
    session.install(*DEV)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(*DEV)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@contextmanager
def default_project(session: nox.Session, purpose: str) -> Iterator[Path]:
    """A project generated with default answers from this checkout (uncommitted changes included), in a temporary
    folder that is the session's working folder while it is used."""
    session.install(*DEV)
    with tempfile.TemporaryDirectory(prefix=f"template-{purpose}-") as scratch:
        project = Path(scratch) / "my-exp"
        session.log(f"generating a default project from {ROOT} into {project}")
        session.run("copier", "copy", "--trust", "--defaults", "--quiet", "--vcs-ref", "HEAD", str(ROOT), str(project))
        session.chdir(project)
        yield project


@nox.session
def reproducibility(session: nox.Session) -> None:
    """The main job: a project generated with default answers proves that it trains bit for bit repeatably."""
    with default_project(session, "reproducibility"):
        proof = ["nox", "--non-interactive", "-s", "reproducibility", "--", *session.posargs]
        session.run(*OUTSIDE_THIS_VENV, *proof, external=True)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks print their figures and ratios; none of them is a test. For now: the launcher's scale."""
    with default_project(session, "bench"):
        script = str(ROOT / "benchmarks" / "launcher.py")
        python = ["uv", "run", "--frozen", "python", script, "--package", "my_experiments", *session.posargs]
        session.run(*OUTSIDE_THIS_VENV, *python, external=True)


# What `nox -s examples` runs in each example project (examples/<name>.yml): the overrides of a short training
# run, then those of its reproducibility proof.
EXAMPLES = {
    "digits": (["trainer.max_steps=100", "sched.warmup_steps=10"], []),
    "char_lm": (
        ["experiment=char_transformer", "trainer.max_steps=60"],
        ["experiment=char_transformer", "trainer.max_steps=60", "trainer.ckpt_every=20", "trainer.eval_every=20"],
    ),
    "lab_models": (
        ["experiment=lab_residual", "trainer.max_steps=100", "sched.warmup_steps=10"],
        ["experiment=lab_residual"],
    ),
}


@nox.session
def examples(session: nox.Session) -> None:
    """Each example project, generated as its user would, trains briefly and proves its bits (-- NAME... for some;
    -- --quick for the first two proofs only, as the template's tests run it: each task's full proof is tested on
    the default project)."""
    quick = "--quick" in session.posargs
    names = [name for name in session.posargs if name != "--quick"] or sorted(EXAMPLES)
    if unknown := sorted(set(names) - set(EXAMPLES)):
        session.error(f"no example {unknown[0]!r}: pick from {', '.join(sorted(EXAMPLES))}")
    session.install(*DEV)
    with tempfile.TemporaryDirectory(prefix="template-examples-") as scratch:
        for name in names:
            training, proof = EXAMPLES[name]
            project = Path(scratch) / name
            session.log(f"{name}: generating from examples/{name}.yml into {project}")
            session.run("python", str(ROOT / "examples" / "build.py"), name, str(project))
            package = tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"]
            with session.chdir(project):
                train = ["uv", "run", "--frozen", "python", "-m", f"{package}.train", "trainer.progress_bar=false"]
                session.run(*OUTSIDE_THIS_VENV, *train, *training, external=True)
                proofs = ["--only", "1,2"] if quick else []
                session.run(
                    *OUTSIDE_THIS_VENV,
                    *["nox", "--non-interactive", "-s", "reproducibility", "--", *proof, *proofs],
                    external=True,
                )
            session.log(f"{name}: trained, and its proof passed")
