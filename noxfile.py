"""Sessions for working on the template.

nox -s reproducibility   generate a default project into a temporary folder and run its own proof
nox -s tests             the library's tests (tests/library/, no Copier), then the template's (generation matrix,
                         hooks, validators, update, jobs, Slurm, container, generated sessions)
nox -s lint              ruff on the template repository, including the plain .py files in template/
nox -s examples          generate each example project (examples/), train it briefly and run its proof
                         (-- --quick: only proofs 1 and 2)
nox -s bench             generate a default project, run the benchmarks (benchmarks/) and write BENCHMARKS.md
                         (-- --quick: tiny counts that check the harness; the report is printed, not written)
"""

from __future__ import annotations

import argparse
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
    # This repository's own lock: samebits (editable) with its extras, torch, and the tooling the tests drive.
    # nox may have made the venv without uv (CI installs nox alone): uv goes in first, then syncs the venv.
    session.install("uv")
    env = {"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}
    session.run_install("uv", "sync", "--frozen", "--inexact", "--all-extras", "--compile-bytecode", env=env)
    # Most tests wait on the projects' training processes, which leave a core idle: two workers keep both busy.
    # A file stays on one worker, so its module fixtures are built once; each worker builds its own session
    # fixtures (the default project and its venvs), so more workers than cores would only add that setup.
    # Files go out in collection order, which tests/conftest.py makes longest first.
    session.run("pytest", "--numprocesses=2", "--dist=loadfile", "--no-loadscope-reorder", *session.posargs)


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
    """Generate a default project, install it from its lock plus Lightning (beside it, not into it), run every
    benchmark (benchmarks/) and write BENCHMARKS.md. `-- --quick`: tiny counts that check the harness, written to a
    temporary BENCHMARKS.md and printed, never over the committed one. `-- --rounds N` (default 5, quick 1).
    `-- --project DIR`: measure an already generated project instead of generating one (the tests do)."""
    parser = argparse.ArgumentParser(prog="nox -s bench --")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--project", type=Path)
    options = parser.parse_args(session.posargs)
    if options.project is None:
        with default_project(session, "bench") as project:
            run_benchmarks(session, project, options.quick, options.rounds or (1 if options.quick else 5))
    else:
        session.install(*DEV)
        run_benchmarks(session, options.project.resolve(), options.quick, options.rounds or (1 if options.quick else 5))


def run_benchmarks(session: nox.Session, project: Path, quick: bool, rounds: int) -> None:
    benchmarks = ROOT / "benchmarks"
    package = tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"].replace("-", "_")
    flags = ["--quick"] if quick else []
    with tempfile.TemporaryDirectory(prefix="template-bench-results-") as scratch:
        results, lightning = Path(scratch), Path(scratch) / "lightning"
        with session.chdir(project):  # bytecode compiled once, or every process would compile torch as it imports
            session.run(*OUTSIDE_THIS_VENV, "uv", "sync", "--frozen", "--inexact", "--compile-bytecode", external=True)
        python = str(project / ".venv" / "bin" / "python")
        install = ["uv", "pip", "install", "--quiet", "--python", python, "--target", str(lightning), "--no-deps"]
        session.run(*install, "-r", str(benchmarks / "lightning-requirements.txt"), external=True)
        inside = [python, str(benchmarks / "run.py"), "--package", package, "--rounds", str(rounds), *flags]
        inside += ["--lightning", str(lightning), "--json", str(results / "inside.json")]
        with session.chdir(project):
            session.run(*OUTSIDE_THIS_VENV, *inside, external=True)
        outside = ["python", str(benchmarks / "outside.py"), "--template", str(ROOT), "--project", str(project)]
        session.run(*outside, "--rounds", str(rounds), "--json", str(results / "outside.json"), *flags)
        out = results / "BENCHMARKS.md" if quick else ROOT / "BENCHMARKS.md"
        report = ["python", str(benchmarks / "report.py"), str(results / "inside.json"), str(results / "outside.json")]
        session.run(*report, "--out", str(out), *flags)
        if quick:
            print(out.read_text())
        session.log(f"wrote {out}")


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
