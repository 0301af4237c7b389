"""Resume cost: process start to the first optimizer step of a resumed run, against a fresh run of the same config.

A run of the default experiment is stopped once at step k (`trainer.stop_at_step`, which saves a checkpoint and
exits with 75, as a preempted job does). Each resumed measurement starts from a copy of that run folder and is
timed to the end of step k + 1; each fresh one starts in an empty runs folder and is timed to the end of step 1.
Both are killed there, through the loop's pause hook (proof/faults.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from results import Goal, Section, ratio, spread
from timing import Stats, interleaved, time_to_marker

GOAL = 1.1


def run(package: str, rounds: int, quick: bool, log: Callable[[str], None]) -> list[Section]:
    stop = 20 if quick else 300
    overrides = [f"trainer.ckpt_every={min(stop, 100)}", *(["sched.warmup_steps=2"] if quick else [])]
    train = [sys.executable, "-m", f"{package}.train", *overrides]
    log(f"resume: {rounds} rounds, resumed at step {stop}")
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as scratch:
        folder = Path(scratch)
        stopped = folder / "stopped"
        done = subprocess.run(
            [*train, f"trainer.stop_at_step={stop}"], env={**os.environ, "RUNS_DIR": str(stopped)}, capture_output=True
        )
        if done.returncode != 75:
            raise RuntimeError(f"the run to resume did not stop at step {stop}: exit {done.returncode}\n{done.stderr}")
        marker = folder / "first-step"

        def started(runs: Path, step: int) -> float:
            env = {**os.environ, "RUNS_DIR": str(runs), "REPRODUCIBILITY_PAUSE": f"step:{step}"}
            return time_to_marker(train, env | {"REPRODUCIBILITY_PAUSE_MARKER": str(marker)}, marker)

        def fresh() -> float:
            return started(Path(tempfile.mkdtemp(dir=folder)), 1)

        def resumed() -> float:
            runs = Path(tempfile.mkdtemp(dir=folder)) / "runs"
            shutil.copytree(stopped, runs)
            return started(runs, stop + 1)

        found = interleaved({"fresh": fresh, "resumed": resumed}, rounds, log)
    cost = ratio(found["resumed"], found["fresh"])
    return [
        Section(
            title="Resume",
            method=f"{rounds} interleaved rounds; the default experiment with {' '.join(overrides)}, resumed from its "
            f"checkpoint at step {stop}. Time from process start to the end of the first optimizer step.",
            columns=["fresh (s)", "resumed (s)", "resumed ÷ fresh"],
            rows=[[spread(Stats.of(found["fresh"])), spread(Stats.of(found["resumed"])), spread(cost)]],
            goals=[Goal(f"resumed ÷ fresh ≤ {GOAL}", f"{cost.median:.2f}", cost.median <= GOAL)],
        )
    ]
