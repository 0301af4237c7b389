"""Launcher scale: plan and status of 1,000 configured runs, half of them with run folders. Goal: at most 2 s.

Run in a generated project's environment (`nox -s bench` does):

    python benchmarks/launcher.py --package my_experiments [--runs 1000] [--rounds 5]

A sweep of N runs (10 learning rates x N/10 seeds) is expanded and checked, then every other run gets a run folder
in a temporary RUNS_DIR, as real runs leave them (config.yaml, status.json, metrics.jsonl, launch.json, run.lock),
in states from finished to lost. Each round times, in this process:
- expand: naming and checking every point (launch/specs.py);
- plan: observing each run and deciding SKIP / RELAUNCH / NEW (what `launch --dry-run` prints);
- status: collecting every run folder and printing the table (what `status` prints).
The baseline is the naive way to name the points, one Hydra composition each (timed on a sample, scaled to N).
Medians with min-max over the rounds; the ratio is ours / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import import_module
from pathlib import Path

from omegaconf import OmegaConf

STATES = ("finished", "failed", "running", "preempted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", required=True, help="the generated project's package, e.g. my_experiments")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as runs:
        os.environ["RUNS_DIR"] = runs
        report(args.package, args.runs, args.rounds, Path(runs))


def report(package: str, count: int, rounds: int, runs: Path) -> None:
    specs = import_module(f"{package}.launch.specs")
    plan = import_module(f"{package}.launch.plan")
    observe = import_module(f"{package}.launch.observe")
    status = import_module(f"{package}.launch.status")
    sweep = import_module(f"{package}.core.sweep")
    overrides = ["optim.lr=" + ",".join(f"{k}e-4" for k in range(1, 11)), f"seed=range(0,{count // 10})"]
    found = specs.expand(overrides)  # also loads what the timed rounds use
    assert len(found) == count, len(found)
    config = OmegaConf.to_yaml(sweep.compose_point(sweep.points(overrides)[0]))  # a real run's config.yaml
    for number, spec in enumerate(found[::2]):
        make_run_folder(spec.run_dir, STATES[number % len(STATES)], config)

    def planned() -> list:
        backends = observe.Backends()
        return [plan.decide(observe.observe(s.run_dir, backends) if s.run_dir.is_dir() else None) for s in found]

    times: dict[str, list[float]] = {"expand": [], "plan": [], "status": []}
    commands = {"launch --dry-run": ["launch", "--dry-run", "--", *overrides], "status": ["status"]}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        times["expand"].append(timed(lambda: specs.expand(overrides)))
        times["plan"].append(timed(planned))
        times["status"].append(timed(lambda: status.table(status.collect(runs))))
        for name, arguments in commands.items():
            run = [sys.executable, "-m", package, *arguments]
            wall[name].append(timed(lambda run=run: subprocess.run(run, check=True, capture_output=True)))
    sample = sweep.points(overrides)[:: max(1, count // 20)]
    naive = timed(lambda: [sweep.compose_point(point) for point in sample]) * count / len(sample)
    actions = {action: sum(step[0] == action for step in planned()) for action in ("NEW", "RELAUNCH", "SKIP")}
    total = [sum(parts) for parts in zip(*times.values(), strict=True)]
    print(f"launcher scale: {count} runs, {count // 2} with run folders, {rounds} rounds, host {socket.gethostname()}")
    print(f"plan: {actions}")
    for name, values in [*times.items(), ("plan + status", total)]:
        print(f"{name:<14} median {statistics.median(values):6.3f} s  (min {min(values):.3f}, max {max(values):.3f})")
    for name, values in wall.items():
        print(f"{name!r} as a command, start-up and imports included: median {statistics.median(values):.2f} s")
    ours = statistics.median(times["expand"])
    print(f"naming by one Hydra composition per run: {naive:.1f} s; expand / that = {ours / naive:.3f}")
    goal = statistics.median(total)
    print(f"goal: expand + plan + status <= 2 s: {'met' if goal <= 2 else 'NOT met'} ({goal:.2f} s)")


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


def timed(work) -> float:  # noqa: ANN001
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
