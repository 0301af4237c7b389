"""The proofs behind `nox -s reproducibility`: real training processes, interrupted in every way we know.

Each proof runs `python -m <package>.train` (or torchrun) in fresh processes, in its own runs folder, and
yields the finished run's `params_sha256`, its `rng_sha256` and every logged metric line, to compare with an
uninterrupted run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..core.files import TEMP_SUFFIX
from ..core.preemption import REQUEUE_EXIT_CODE
from ..core.run_files import RunFiles
from ..project import current
from . import forks

TIMEOUT_S = 900  # for one training process; a default run takes well under a minute


@dataclass
class RunResult:
    params_sha256: str
    rows: list[dict[str, float]]  # metrics.jsonl, line by line
    problems: list[str] = field(default_factory=list)  # what the proof saw go wrong besides the bits
    rng_sha256: str | None = None  # every generator's state at the end (None: not recorded)


@dataclass
class Schedule:
    """Step counts of the config under test, from which the proofs pick their interruption points."""

    max_steps: int
    ckpt_every: int
    batches_per_epoch: int | None  # None: the data's schema does not tell its size (no `train_samples()`)
    eval_every: int | None = None  # an evaluation that beats the best is saved at its step too

    def mid_epoch_step(self, rng: random.Random) -> int:
        """A step in the middle half of the run that is neither an epoch end nor a checkpoint step."""
        low, high = max(1, self.max_steps // 4), max(2, 3 * self.max_steps // 4)
        epoch = self.batches_per_epoch or self.max_steps + 1
        steps = [s for s in range(low, high) if s % epoch and s % self.ckpt_every] or [low]
        return rng.choice(steps)

    def checkpoint_steps(self) -> list[int]:
        return [*range(self.ckpt_every, self.max_steps, self.ckpt_every), self.max_steps]


# What every run of the proof shares; the fork server starts with it (see forks.py).
SHARED_ENVIRONMENT = {
    "PYTHONHASHSEED": "0",
    "REPRODUCIBILITY_QUICK_EXIT": "1",
    "REPRODUCIBILITY_RNG_CANARY": "1",  # NumPy's and Python's generators must be resumed too
}


# What every run imports, besides the modules its config instantiates (Runner's `preload`). Not the project's entry
# module itself: runpy runs it as __main__, and a copy already imported under its own name would be a second module
# object, which `python -m` never makes. torch._inductor is imported by torch.use_deterministic_algorithms, at the
# start of every run (and with it torch._dynamo, which every optimizer imports too).
PRELOAD = ["samebits.entry", "torch._inductor"]
FORKED_TORCHRUN = "samebits.proof.forked_torchrun"


class Runner:
    """Starts training processes with the overrides under test, each in a runs folder under `scratch`: forked from
    a server that has imported torch (forks.py), or with `fresh`, each a new interpreter."""

    def __init__(
        self,
        scratch: Path,
        overrides: list[str],
        log: Callable[[str], None],
        fresh: bool = False,
        preload: Sequence[str] = (),
    ) -> None:
        self.scratch, self.overrides, self.log = scratch, overrides, log
        self._forks = None
        self._preload = [*PRELOAD, *preload]
        if not fresh:
            self._forks = forks.start_server(self._preload, SHARED_ENVIRONMENT, scratch / "resource_tracker.stderr")

    def folder(self, name: str) -> Path:
        return self.scratch / name

    def run(
        self, name: str, *extra: str, expect: int = 0, pause: str = "", send: int = signal.SIGKILL, nproc: int = 1
    ) -> None:
        """Train in runs folder `name` until the process exits; with `pause` (see core/failpoints.py), `send` it a
        signal there."""
        marker = self.scratch / f"{name}.paused"
        marker.unlink(missing_ok=True)
        env = {**os.environ, **SHARED_ENVIRONMENT, "REPRODUCIBILITY_PAUSE": pause}
        env["REPRODUCIBILITY_PAUSE_MARKER"] = str(marker)
        module, args = f"{current().package}.train", [f"paths.runs_dir={self.folder(name)}", "main_tag=proof"]
        if nproc > 1:
            torchrun = ["--standalone", f"--nproc-per-node={nproc}", "-m", module, *args]
            if self._forks is None:
                module, args = "torch.distributed.run", torchrun
            else:  # its workers forked too, from a server of the launcher's (forked_torchrun.py)
                module, args = FORKED_TORCHRUN, ["--preload", ",".join(self._preload), *torchrun]
        # stderr goes to a file: a pipe nobody reads while we wait for the pause would fill and block the run.
        stderr_file = self.scratch / f"{name}.stderr"
        process = self._start(module, [*args, *self.overrides, *extra], env, stderr_file)
        if pause:
            self._wait_for(marker, process)
            process.send_signal(send)
        try:
            process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            raise RuntimeError(f"{name}: still running after {TIMEOUT_S} s, killed") from None
        stderr = stderr_file.read_text(errors="replace")
        if process.returncode != expect and not (expect != 0 and nproc > 1 and process.returncode != 0):
            # torchrun exits 1 whatever code its workers return, so for it any failure code is accepted here
            # and the run's status.json says what really happened.
            tail = "\n".join(stderr.strip().splitlines()[-5:])
            raise RuntimeError(f"{name}: exit code {process.returncode}, expected {expect}\n{tail}")

    def _start(
        self, module: str, args: list[str], env: dict[str, str], stderr: Path
    ) -> forks.Forked | subprocess.Popen[bytes]:
        if self._forks is not None:
            return forks.Forked(self._forks, module, args, env, stderr)
        with stderr.open("w") as errors:
            return subprocess.Popen(
                [sys.executable, "-m", module, *args], env=env, stdout=subprocess.DEVNULL, stderr=errors
            )

    def _wait_for(self, marker: Path, process: forks.Forked | subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not marker.exists():
            if process.poll() is not None:
                raise RuntimeError(f"the run exited with code {process.returncode} before reaching its pause point")
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the run did not reach its pause point in {TIMEOUT_S} s")
            time.sleep(0.02)

    def run_dir(self, name: str) -> Path:
        (run_dir,) = (self.folder(name) / "proof").iterdir()
        return run_dir

    def status(self, name: str) -> str:
        return json.loads(RunFiles(self.run_dir(name)).status.read_text())["state"]

    def result(self, name: str, problems: list[str] | None = None) -> RunResult:
        run_dir = self.run_dir(name)
        summary = json.loads(RunFiles(run_dir).summary.read_text())
        rows = [json.loads(line) for line in RunFiles(run_dir).metrics.read_text().splitlines()]
        leftovers = [p.name for p in RunFiles(run_dir).checkpoints.glob(f"*{TEMP_SUFFIX}")]
        found = list(problems or []) + ([f"temporary files left: {leftovers}"] if leftovers else [])
        return RunResult(summary["params_sha256"], rows, found, summary["rng_sha256"])  # required here

    def copy(self, source: str, name: str) -> None:
        shutil.copytree(self.folder(source), self.folder(name))


# Each proof returns its candidate runs: (proof name, which reference to compare with, result).
Candidates = list[tuple[str, str, RunResult]]


def reference(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    runner.run("reference")
    return [("", "reference", runner.result("reference"))]


def twice(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    runner.run("repeat")
    return [("1 two identical runs", "reference", runner.result("repeat"))]


def stop_and_resume(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    """Proofs 2, 3 and 7 share one first half, stopped mid-epoch at step k."""
    k = schedule.mid_epoch_step(rng)
    runner.run("resume", f"trainer.stop_at_step={k}", expect=REQUEUE_EXIT_CODE)
    runner.copy("resume", "workers")
    runner.copy("resume", "corrupt")
    latest = RunFiles(runner.run_dir("corrupt")).checkpoints / f"step_{k:06d}.pt"
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])  # a torn write
    # Three copies of one first half, resumed side by side: this chain is the proof's longest.
    resumes = [
        ["resume"],
        ["workers", "trainer.num_workers=2", f"trainer.ckpt_every={max(1, schedule.ckpt_every // 2)}"],
        ["corrupt"],
    ]
    with ThreadPoolExecutor(max_workers=len(resumes)) as pool:
        list(pool.map(lambda resume: runner.run(*resume), resumes))  # list(): a failed run raises here
    log = RunFiles(runner.run_dir("corrupt")).log.read_text()
    detected = [] if "checksum (the file is damaged)" in log else ["the damaged checkpoint was not reported"]
    return [
        (f"2 stop at {k}, resume", "reference", runner.result("resume")),
        (f"3 resume at {k}, 2 workers", "reference", runner.result("workers")),  # and checkpoints twice as often
        (f"7 damaged step-{k} checkpoint", "reference", runner.result("corrupt", detected)),
    ]


def kill_nine(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    """kill -9 at a random step, then while a checkpoint is being written, then at another random step."""
    first, saving, third = kill_points(schedule, rng)
    for pause in (f"step:{first}", f"save:{saving}", f"step:{third}"):
        runner.run("kill", expect=-signal.SIGKILL, pause=pause)
    runner.run("kill")
    return [(f"4 kill -9 at {first}, saving {saving}, {third}", "reference", runner.result("kill"))]


def kill_points(schedule: Schedule, rng: random.Random) -> tuple[int, int, int]:
    """A random step, the checkpoint after it (killed while being written), and a step the next run reaches."""
    first = rng.randrange(1, schedule.max_steps)
    saving = min(s for s in schedule.checkpoint_steps() if s > first)
    # The kill while saving leaves the checkpoint before `saving` as the latest: the next run resumes there, so the
    # third stop lies after it. (The last interval can be shorter than ckpt_every: 200 -> 240.) It also lies after
    # the first checkpoint, or the relaunch would start from scratch and the proof would test no resume at all.
    resumed_at = max([0, *(s for s in schedule.checkpoint_steps() if s < saving)])
    low = min(max(resumed_at, schedule.ckpt_every) + 1, schedule.max_steps - 1)
    return first, saving, rng.randrange(low, schedule.max_steps)


def kill_in_flight(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    """kill -9 while a checkpoint is written in the background and the loop has trained, and logged, past it."""
    saving, step = in_flight_points(schedule, rng)
    pause = f"inflight:{saving}:{step}" if step else f"save:{saving}"
    runner.run("in-flight", expect=-signal.SIGKILL, pause=pause)
    runner.run("in-flight")
    at = f"at {step}, step {saving} in flight" if step else f"writing step {saving}"
    return [(f"8 kill -9 {at}", "reference", runner.result("in-flight"))]


def in_flight_points(schedule: Schedule, rng: random.Random) -> tuple[int, int | None]:
    """A checkpoint step with one before it, and a step the loop reaches before any save after it may be due (the
    next checkpoint, or an evaluation that may save the best); with no such step (a save every step), None: the
    kill then lands mid-write, wherever the loop is."""
    steps = schedule.checkpoint_steps()
    evaluations = schedule.eval_every or schedule.ckpt_every

    def next_save(saved: int) -> int:
        return min(saved + schedule.ckpt_every, (saved // evaluations + 1) * evaluations, schedule.max_steps)

    gaps = [(saved, next_save(saved)) for saved in steps[:-1] if next_save(saved) - saved >= 2]
    resumed = [gap for gap in gaps if gap[0] != steps[0]] or gaps
    if not resumed:
        return steps[0], None
    saved, after = rng.choice(resumed)
    return saved, rng.randrange(saved + 1, after)


def sigterm(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    step = rng.randrange(1, schedule.max_steps)
    runner.run("sigterm", expect=REQUEUE_EXIT_CODE, pause=f"step:{step}", send=signal.SIGTERM)
    problems = [] if runner.status("sigterm") == "preempted" else [f"status {runner.status('sigterm')!r}"]
    runner.run("sigterm")
    return [(f"5 SIGTERM at {step}, exit {REQUEUE_EXIT_CODE}", "reference", runner.result("sigterm", problems))]


def torchrun(runner: Runner, schedule: Schedule, rng: random.Random) -> Candidates:
    """Two processes (DDP): twice the same, and stopped mid-epoch then resumed, against their own reference."""
    k = schedule.mid_epoch_step(rng)
    runner.run("ddp-reference", nproc=2)
    runner.run("ddp-repeat", nproc=2)
    runner.run("ddp-resume", f"trainer.stop_at_step={k}", nproc=2, expect=REQUEUE_EXIT_CODE)
    problems = [] if runner.status("ddp-resume") == "paused" else [f"status {runner.status('ddp-resume')!r}"]
    runner.run("ddp-resume", nproc=2)
    return [
        ("", "ddp-reference", runner.result("ddp-reference")),
        ("6 torchrun x2: two runs", "ddp-reference", runner.result("ddp-repeat")),
        (f"6 torchrun x2: resume at {k}", "ddp-reference", runner.result("ddp-resume", problems)),
    ]
