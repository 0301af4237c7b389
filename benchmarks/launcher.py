"""Launcher scale: plan and status of 1,000 configured runs, half of them with run folders. Goal: at most 2 s.

Run by run.py in a generated project's environment (`nox -s bench`).

A sweep of N runs (10 learning rates x N/10 seeds) is expanded and checked, then every other run gets a run folder
in a temporary RUNS_DIR, as real runs leave them (config.yaml, status.json, metrics.jsonl, launch.json, run.lock),
in states from finished to lost. Each round times, in this process:
- expand: naming and checking every point (launch/specs.py);
- plan: observing each run and deciding SKIP / RELAUNCH / NEW (what `launch --dry-run` prints);
- status: collecting every run folder and printing the table (what `status` prints).
For scale, the naive way to name the points: one Hydra composition each (timed on a sample, scaled to N).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from omegaconf import OmegaConf

from results import Goal, Section, spread
from timing import Stats, interleaved, timed

STATES = ("finished", "failed", "running", "preempted")


GOAL_S = 2.0


def run(package: str, count: int, rounds: int, log: Callable[[str], None]) -> list[Section]:
    log(f"launcher: {count} runs, half with run folders, {rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="bench-launcher-") as runs:
        previous = os.environ.get("RUNS_DIR")
        os.environ["RUNS_DIR"] = runs
        try:
            return [measure(package, count, rounds, Path(runs), log)]
        finally:
            if previous is None:
                del os.environ["RUNS_DIR"]
            else:
                os.environ["RUNS_DIR"] = previous


def measure(package: str, count: int, rounds: int, runs: Path, log: Callable[[str], None]) -> Section:
    specs = import_module("samebits.launch.specs")
    plan = import_module("samebits.launch.plan")
    observe = import_module("samebits.launch.observe")
    status = import_module("samebits.launch.status")
    sweep = import_module("samebits.core.sweep")
    composition = import_module("samebits.composition")
    overrides = ["optim.lr=" + ",".join(f"{k}e-4" for k in range(1, 11)), f"seed=range(0,{max(1, count // 10)})"]
    found = specs.expand(overrides)  # also loads what the timed rounds use
    config = OmegaConf.to_yaml(composition.composed(sweep.points(overrides)[0]))  # a real run's config.yaml
    for number, spec in enumerate(found[::2]):
        make_run_folder(spec.run_dir, STATES[number % len(STATES)], config)

    def planned() -> list:
        backends = observe.Backends()
        return [plan.decide(observe.observe(s.run_dir, backends) if s.run_dir.is_dir() else None) for s in found]

    def command(*arguments: str) -> Callable[[], float]:
        argv = [sys.executable, "-m", package, *arguments]
        return lambda: timed(lambda: subprocess.run(argv, check=True, capture_output=True))

    times = interleaved(
        {
            "expand": lambda: timed(lambda: specs.expand(overrides)),
            "plan": lambda: timed(planned),
            "status": lambda: timed(lambda: status.table(status.collect(runs))),
            "`launch --dry-run` as a command": command("launch", "--dry-run", "--", *overrides),
            "`status` as a command": command("status"),
        },
        rounds,
        log,
    )
    sample = sweep.points(overrides)[:: max(1, len(found) // 20)]
    naive = timed(lambda: [composition.composed(point) for point in sample]) * len(found) / len(sample)
    total = Stats.of([sum(parts) for parts in zip(times["expand"], times["plan"], times["status"], strict=True)])
    section = Section(
        title="Launcher at scale",
        method=f"{len(found)} configured runs (10 learning rates × seeds), every other one with a run folder as real "
        f"runs leave them, in states from finished to lost; {rounds} rounds. In process: expand (naming and checking "
        "every point), plan (SKIP / RELAUNCH / NEW for each), status (every run folder read, table printed). As "
        "commands: start-up and imports included.",
        columns=["part", "seconds"],
        rows=[[name, spread(Stats.of(values))] for name, values in times.items()],
    )
    section.rows.insert(3, ["expand + plan + status", spread(total)])
    section.notes.append(
        f"Naming each run by one Hydra composition instead would take {naive:.1f} s for expand alone (timed on "
        f"{len(sample)} runs, scaled)."
    )
    section.goals.append(
        Goal(f"expand + plan + status ≤ {GOAL_S:g} s", f"{total.median:.2f} s", total.median <= GOAL_S)
    )
    return section


def make_run_folder(run_dir: Path, state: str, config: str) -> None:
    """What a run of that state leaves behind, at its real sizes."""
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(config)
    step = 600 if state == "finished" else 300
    updated = "2026-01-01T00:00:00+00:00"
    (run_dir / "status.json").write_text(json.dumps({"state": state, "step": step, "updated_at": updated}))
    lines = [{"step": s, "train/loss": 0.5} for s in range(10, step + 1, 10)] + [{"step": step, "val/loss": 0.4}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (run_dir / "run.lock").write_text(f"pid 1 on another-host since {updated}\n")
    record = {"backend": "local", "state": "ended", "exit_code": 0, "job_id": "another-host:1"}
    (run_dir / "launch.json").write_text(json.dumps(record))
