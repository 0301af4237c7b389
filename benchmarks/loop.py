"""Loop overhead: the generated train.py against a bare PyTorch loop and Lightning's Trainer, on the same work.

Every contender is a whole process, as a user runs it, with the project's defaults on for ours (metrics every
`log_every` steps, a checkpoint every `ckpt_every` steps, evaluation every `eval_every` steps, deterministic
mode, progress bar drawn on a terminal, provenance, run folder). Steady state is timed inside each process, from
the first evaluation to the last (ours: the timestamps of train.log's evaluation lines; the others print theirs),
so that start-up and teardown, which vary by seconds on a shared machine, stay out of it; it spans the same
steps, evaluations and checkpoints for every contender. Start-up is timed apart: from starting the process to the
end of its first optimizer step.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from results import Goal, Section, ratio, spread
from timing import Stats, interleaved, run_on_a_terminal, time_to_marker

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Workload:
    name: str
    overrides: list[str]
    steps: int
    eval_every: int


def workloads(quick: bool) -> list[Workload]:
    # The language model's own cadence (an evaluation and a checkpoint every 260 steps) falls beyond a benchmark's
    # short runs, whose steps are slow (BENCHMARKS.md); every 20 steps keeps both inside the timed span, for every
    # contender alike.
    char = ["experiment=char_transformer", "trainer.log_every=10"]
    if quick:
        short = ["sched.warmup_steps=2", "trainer.log_every=5"]
        return [Workload("digits MLP", short, 20, 5), Workload("char transformer", [char[0], *short], 10, 5)]
    return [Workload("digits MLP", [], 2400, 100), Workload("char transformer", char, 60, 20)]


def run(package: str, rounds: int, quick: bool, lightning: Path | None, log: Callable[[str], None]) -> list[Section]:
    return [measure(package, workload, rounds, lightning, log) for workload in workloads(quick)]


def measure(package: str, workload: Workload, rounds: int, lightning: Path | None, log: Callable) -> Section:
    log(f"loop overhead, {workload.name}: {workload.steps} steps, {rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as scratch:
        folder = Path(scratch)
        contenders = _contenders(package, workload, folder, lightning)
        spans: dict[str, list[float]] = {name: [] for name in contenders}

        def whole(name: str, command: Callable) -> Callable[[], float]:
            def measure_once() -> float:
                env = _env(folder, lightning)
                elapsed, output = run_on_a_terminal(command(), env)
                spans[name].append(_steady_seconds_per_step(name, output, Path(env["RUNS_DIR"])))
                return elapsed

            return measure_once

        wall = interleaved({name: whole(name, command) for name, command in contenders.items()}, rounds, log)
        marker = folder / "first-step"
        starts = {
            name: lambda command=command: time_to_marker(command(marker), _env(folder, lightning, marker), marker)
            for name, command in contenders.items()
        }
        startup = interleaved(starts, rounds, log)
    first, last = workload.eval_every, workload.steps
    section = Section(
        title=f"Loop overhead: {workload.name}",
        method=f"{rounds} interleaved rounds of whole runs of {last} steps, evaluating and checkpointing every "
        f"{first} ({' '.join(workload.overrides) or 'the defaults'}). Steady state: time per step from the "
        f"evaluation at step {first} to the one at step {last}, inside each process; start-up: process start to the "
        "end of the first step, timed apart. Speed ÷ bare: the bare loop's time per step ÷ the contender's, round by "
        "round (1.00: as fast as bare).",
        columns=["contender", "ms per step", "speed ÷ bare", f"whole {last}-step run (s)", "start-up (s)",
                 "start-up − bare (s)"],
    )  # fmt: skip
    for name in contenders:
        speed = ratio(spans["bare"], spans[name])
        extra = Stats.of([a - b for a, b in zip(startup[name], startup["bare"], strict=True)])
        section.rows.append(
            [name, spread(Stats.of(spans[name]), 1000), spread(speed), spread(Stats.of(wall[name])),
             spread(Stats.of(startup[name])), spread(extra, digits=2)]
        )  # fmt: skip
    speed = ratio(spans["bare"], spans["ours"]).median
    extra = Stats.of([a - b for a, b in zip(startup["ours"], startup["bare"], strict=True)]).median
    section.goals = [
        Goal(f"{workload.name}: ours ÷ bare ≥ 0.97, steady state", f"{speed:.3f}", speed >= 0.97),
        Goal(f"{workload.name}: start-up within 0.5 s of bare", f"{extra:+.2f} s", extra <= 0.5),
    ]
    if lightning is None:
        section.notes.append("Lightning was not installed: its rows are missing (nox -s bench installs it).")
    return section


def _steady_seconds_per_step(name: str, output: str, runs: Path) -> float:
    """Seconds per step between the first and the last evaluation of one process."""
    if name == "ours":
        logs = list(runs.glob("*/*/train.log"))
        if len(logs) != 1:
            raise RuntimeError(f"expected one run's train.log under {runs}, found {len(logs)}")
        found = [
            (int(match[2]), datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f").timestamp())
            for match in re.finditer(r"^\[([^]]+)\]\[INFO\] step (\d+)/\d+ ", logs[0].read_text(), flags=re.M)
        ]
    else:
        found = [(int(step), float(at)) for step, at in re.findall(r"evaluated (\d+) at ([\d.]+)", output)]
    if len(found) < 2:
        raise RuntimeError(f"{name}: fewer than two evaluations timed")
    (first_step, start), (last_step, end) = found[0], found[-1]
    return (end - start) / (last_step - first_step)


def _contenders(package: str, workload: Workload, folder: Path, lightning: Path | None) -> dict[str, Callable]:
    """name -> command(marker=None): the argv of one process of that contender."""
    overrides = [
        *workload.overrides,
        f"trainer.max_steps={workload.steps}",
        f"trainer.eval_every={workload.eval_every}",
        f"trainer.ckpt_every={workload.eval_every}",
    ]
    config = folder / "config.yaml"
    OmegaConf.save(_compose(package, overrides), config)

    def ours(marker: Path | None = None) -> list[str]:
        return [sys.executable, "-m", f"{package}.train", *overrides]

    def script(name: str, *options: str) -> Callable:
        def command(marker: Path | None = None) -> list[str]:
            marked = ["--first-step-marker", str(marker)] if marker else []
            return [sys.executable, str(HERE / name), str(config), *options, *marked]

        return command

    found = {"ours": ours, "bare": script("bare_loop.py")}
    if lightning is not None:
        found["lightning minimal"] = script("lightning_loop.py", "--variant", "minimal")
        found["lightning + CSV, checkpoints, bar"] = script("lightning_loop.py", "--variant", "full")
    return found


def _env(folder: Path, lightning: Path | None, marker: Path | None = None) -> dict[str, str]:
    """A fresh runs folder for every run of ours (a finished name would not train again), and the first-step
    marker through the loop's own pause hook (proof/faults.py), which the proof uses to stop a run at a step."""
    runs = tempfile.mkdtemp(prefix="runs-", dir=folder)
    env = {**os.environ, "RUNS_DIR": runs}
    if lightning is not None:  # installed beside the project's environment, not into it
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(lightning), os.environ.get("PYTHONPATH")]))
    if marker is not None:
        env |= {"REPRODUCIBILITY_PAUSE": "step:1", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    return env


def _compose(package: str, overrides: list[str]) -> DictConfig:
    from importlib import import_module

    import_module("samebits.core.naming")  # registers the run name's resolver
    return import_module("samebits.composition").composed(overrides)
