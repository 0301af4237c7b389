"""The benchmarks that run commands on a project from outside it: its reproducibility proof, and Copier's copy and
update of the template. `nox -s bench` runs this module with its own Python, which has Copier and nox.

    python benchmarks/outside.py --template DIR --project DIR --rounds N [--quick] --json OUT
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from results import Goal, Section, ratio, spread
from timing import Stats, interleaved, timed

PROOF_GOAL_S = 60
# Commands in a project run as from a user's shell: without the calling session's venv variables.
USER_ENV = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]


def proof(project: Path, rounds: int, quick: bool) -> Section:
    """Wall time of the project's `nox -s reproducibility`, its venv made before the first timed round: as it runs
    (each run forked from a process that has imported torch), and with `--fresh` (each run a new interpreter)."""
    short = ["trainer.max_steps=20", "trainer.ckpt_every=10", "trainer.eval_every=10", "sched.warmup_steps=2"]
    limited = ["--only", "1", *short]
    command = ["uv", "run", "--frozen", "nox", "--non-interactive", "-s", "reproducibility", "--", *(limited * quick)]
    _log(f"proof: its venv made by a short proof, then {rounds} timed rounds of {' '.join(command)} [--fresh]")
    if not quick:  # a quick run's first round is this short proof: it makes the venv as it goes
        _run([*command, *limited], project)
    found = interleaved(
        {
            "forked": lambda: timed(lambda: _run(command, project)),
            "fresh": lambda: timed(lambda: _run([*command, "--fresh"], project)),
        },
        rounds,
        _log,
    )
    forked, fresh = Stats.of(found["forked"]), Stats.of(found["fresh"])
    ratios = ratio(found["forked"], found["fresh"])
    what = "proof 1 only, 20 steps (--quick)" if quick else "all eight proofs, the default 240-step runs"
    return Section(
        title="Reproducibility proof",
        method=f"`uv run nox -s reproducibility` in the default project, {what}, {rounds} interleaved rounds"
        + ("" if quick else "; the session's venv made before the first, as a developer's second run finds it")
        + ". Forked: every run forked from one process that has imported torch, torchrun's workers from one of "
        "torchrun's launcher (the default); fresh: `-- --fresh`, every run a new interpreter. Forked ÷ fresh: "
        "round by round. " + f"CPU cores: {os.cpu_count()}.",
        columns=["forked (s)", "fresh (s)", "forked ÷ fresh"],
        rows=[[spread(forked), spread(fresh), spread(ratios)]],
        goals=[Goal(f"≤ {PROOF_GOAL_S} s on 2 cores", f"{forked.median:.0f} s", forked.median <= PROOF_GOAL_S)],
    )


def template_operations(template: Path, rounds: int) -> Section:
    """`copier copy` of the default project (its tasks included: git, submodules, uv lock, first commit), then
    `copier update` of that project to a newer template version (a commit that adds one file)."""
    with tempfile.TemporaryDirectory(prefix="bench-copier-") as scratch:
        folder = Path(scratch)
        source = folder / "template"
        subprocess.run(["git", "clone", "--quiet", str(template), str(source)], check=True)
        _copy_worktree(template, source)
        _commit(source, "v1.0.0")
        (source / "template" / "configs" / "bench-note.md").write_text("# A note that a new version adds\n")
        _commit(source, "v1.1.0")
        found: dict[str, list[float]] = {"copy": [], "update": []}
        _log(f"template operations: {rounds} rounds of copier copy, then copier update of that copy")
        for number in range(1, rounds + 1):
            project = folder / f"project-{number}"
            copy = ["copy", "--vcs-ref", "v1.0.0", str(source), str(project)]
            found["copy"].append(timed(lambda copy=copy: _copier(copy)))
            found["update"].append(timed(lambda project=project: _copier(["update", "--vcs-ref", "v1.1.0"], project)))
            if not (project / "configs" / "bench-note.md").is_file():
                raise RuntimeError(f"copier update left {project} without the new version's file")
            _log(f"  round {number}/{rounds}: copy {found['copy'][-1]:.3g}, update {found['update'][-1]:.3g}")
    return Section(
        title="Template operations",
        method=f"{rounds} rounds. `copier copy --trust --defaults` of the default project, its tasks included (git "
        "init, submodules, `uv lock` from a warm uv cache, first commit); then `copier update --trust --defaults` of "
        "that project to a version that adds one file (its migrations included).",
        columns=["copier copy (s)", "copier update (s)"],
        rows=[[spread(Stats.of(found["copy"])), spread(Stats.of(found["update"]))]],
    )


def _copy_worktree(template: Path, clone: Path) -> None:
    """The template as it is in the working tree (uncommitted changes too), as `copier copy` of a folder takes it."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=template, capture_output=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (template / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(template / name, clone / name)


def _commit(repo: Path, tag: str) -> None:
    subprocess.run(["git", "add", "--all"], cwd=repo, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "--allow-empty", "-m", tag], cwd=repo, check=True)
    subprocess.run(["git", "tag", tag], cwd=repo, check=True)


def _copier(arguments: list[str], cwd: Path | None = None) -> None:
    _run([sys.executable, "-m", "copier", arguments[0], "--trust", "--defaults", "--quiet", *arguments[1:]], cwd)


def _run(command: list[str], cwd: Path | None) -> None:
    done = subprocess.run(command, cwd=cwd, env=USER_ENV, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, required=True)
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    rounds = min(args.rounds, 3)  # each round takes a minute or more: three tell the spread well enough
    sections = [proof(args.project, rounds, args.quick), template_operations(args.template, rounds)]
    args.json.write_text(json.dumps({"sections": [section.as_dict() for section in sections]}, indent=1))


if __name__ == "__main__":
    main()
