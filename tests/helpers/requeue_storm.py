"""A requeue storm on a Slurm cluster: each run of a job array interrupted again and again, at moments the test
draws, by the three ways a cluster stops a job mid-run.

- `requeue`: `scontrol requeue`, as an admin or a failed node does. Slurm sends SIGTERM and requeues the task.
- `preemption`: a job of the `high` partition on the task's node. Slurm sends the job's --signal (USR2, with
  `preempt_send_user_signal`) and requeues the task after its grace time.
- `usr2`: `scancel --signal=USR2 --batch`, what Slurm sends before a time limit. job.sh requeues the task itself
  once the run has saved. The task is named `<array>_<task>`: its own job id may be the array's (the last task
  to start takes it), which would signal every task. While other tasks of its array wait, Slurm 22.05 delivers
  the signal at once but answers "Job can not be altered now", and scancel would send it again and again for a
  minute; so scancel is stopped after its first request.

An attempt is interrupted once it has trained a random number of steps past the step it resumed from (read from
status.json, which training rewrites at every checkpoint), then a random fraction of a second later: so signals
land between checkpoints, at no step chosen in advance. A requeued task waits in the queue until Slurm's begin
time; the storm sets it to now once the task has been back in the queue for a few seconds (sooner, Slurm fails
the task instead of starting it: tests/test_launch.py).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from helpers.slurm_cluster import Cluster

MECHANISMS = ("requeue", "preemption", "usr2")
REQUEUED_WAIT_S = 5.0
LANDING_S = 90.0  # an interrupted run that still says running this long after was never reached


@dataclass
class Target:
    """One run of the storm: what is still to be done to it, and what was."""

    run_dir: Path
    job_id: str
    plan: list[str]
    delivered: list[tuple[str, int]] = field(default_factory=list)  # (mechanism, step status.json showed)
    stopping: bool = False  # interrupted, and its next attempt not yet seen running
    attempts_then: int = 0  # attempts.jsonl's lines when it was interrupted
    resumed_at: int | None = None  # the step the current attempt started from, once seen running
    interrupt_after: int = 0
    fire_at: float | None = None
    released_at: float = 0.0  # when it was interrupted, or its begin time last moved to now
    fired_at: float = 0.0  # when it was last interrupted

    @property
    def name(self) -> str:
        return self.run_dir.name


def plans(run_dirs: list[Path], interruptions: int, rng: random.Random) -> list[Target]:
    """Every mechanism equally often, shuffled over the runs' interruptions. The last run's task starts last, under
    its array's own job id, which names every task of the array: its first interruption is `usr2`, after which
    job.sh requeues its own job, and must requeue that task alone."""
    count = len(run_dirs) * interruptions
    mechanisms = [MECHANISMS[index % len(MECHANISMS)] for index in range(count)]
    rng.shuffle(mechanisms)
    last = (len(run_dirs) - 1) * interruptions
    swap = mechanisms.index("usr2")
    mechanisms[last], mechanisms[swap] = mechanisms[swap], mechanisms[last]
    return [
        Target(run_dir, _job_id(run_dir), mechanisms[index * interruptions : (index + 1) * interruptions])
        for index, run_dir in enumerate(run_dirs)
    ]


def storm(
    cluster: Cluster,
    targets: list[Target],
    rng: random.Random,
    *,
    steps_between: tuple[int, int] = (5, 50),
    timeout: float = 1200,
    report: Callable[[str], None] = print,
) -> None:
    """Interrupt each target as its plan says, and release requeued tasks, until every run has finished."""
    deadline, last_report = time.monotonic() + timeout, 0.0
    while True:
        queue = _queue(cluster)
        open_ = [target for target in targets if not (target.run_dir / "summary.json").exists()]
        if not open_:
            return
        now = time.monotonic()
        for target in open_:
            _advance(cluster, target, queue.get(target.job_id), rng, steps_between, now)
        if now - last_report > 30:
            done = sum(len(target.delivered) for target in targets)
            total = done + sum(len(target.plan) for target in targets)
            report(f"storm: {done}/{total} interruptions delivered, {len(targets) - len(open_)} runs finished")
            last_report = now
        if now > deadline:
            states = "\n".join(f"{t.name} {t.job_id} {_status(t.run_dir)} {queue.get(t.job_id)}" for t in open_)
            raise AssertionError(f"the storm did not end in {timeout:.0f} s:\n{states}")
        time.sleep(0.2)


def _advance(
    cluster: Cluster,
    target: Target,
    queued: tuple[str, str, str, str] | None,
    rng: random.Random,
    steps_between: tuple[int, int],
    now: float,
) -> None:
    state, step = _status(target.run_dir)
    if queued and queued[0] == "PENDING" and queued[1] == "BeginTime" and now - target.released_at > REQUEUED_WAIT_S:
        cluster.run("scontrol", "update", f"JobId={target.job_id}", "StartTime=now", check=False)
        target.released_at = now  # asked once per wait
        return
    if target.stopping:  # a new attempt writes a line of attempts.jsonl, then status.json says running
        if state == "running" and _attempts(target.run_dir) > target.attempts_then:
            target.stopping, target.resumed_at = False, None
        elif state == "running" and now - target.fired_at > LANDING_S:
            mechanism, step = target.delivered[-1]
            raise AssertionError(f"{target.name} ({target.job_id}) still trains {LANDING_S:.0f} s after {mechanism} "
                                 f"at step {step}: the interruption did not reach it")  # fmt: skip
        return
    if not target.plan or state != "running" or not queued or queued[0] != "RUNNING":
        return
    if target.resumed_at is None:
        target.resumed_at, target.fire_at = step, None
        target.interrupt_after = step + rng.randint(*steps_between)
    if target.fire_at is None and step >= target.interrupt_after:
        target.fire_at = now + rng.uniform(0.0, 0.3)
    if target.fire_at is not None and now >= target.fire_at:
        mechanism = target.plan.pop(0)
        target.attempts_then, target.released_at, target.fired_at = _attempts(target.run_dir), now, now
        _interrupt(cluster, target, mechanism, node=queued[3])
        target.delivered.append((mechanism, step))
        target.stopping = True


def _interrupt(cluster: Cluster, target: Target, mechanism: str, node: str) -> None:
    if mechanism == "requeue":
        cluster.run("scontrol", "requeue", target.job_id)
    elif mechanism == "usr2":
        command = ["scancel", "--signal=USR2", "--batch", target.job_id]
        scancel = subprocess.Popen(
            command, env=cluster.environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            scancel.wait(timeout=2)
        except subprocess.TimeoutExpired:
            scancel.kill()
            scancel.wait()
    else:  # a job of the high partition that needs the task's node: Slurm preempts the task to make room
        output = f"--output={cluster.folder / 'high-%j.out'}"
        cluster.run("sbatch", "--partition=high", "--nodes=1", f"--nodelist={node}", output, "--wrap", "sleep 1")


def _queue(cluster: Cluster) -> dict[str, tuple[str, str, str, str]]:
    """Array task id -> (state, reason, its own job id, node) of every job Slurm still holds."""
    done = cluster.run("squeue", "--noheader", "--array", "--format=%i|%T|%r|%A|%N", check=False)
    found = {}
    for line in done.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5:
            found[parts[0]] = (parts[1], parts[2], parts[3], parts[4])
    return found


def _status(run_dir: Path) -> tuple[str | None, int]:
    try:
        status = json.loads((run_dir / "status.json").read_text())
        return status.get("state"), int(status.get("step", 0))
    except (OSError, ValueError):
        return None, 0


def _attempts(run_dir: Path) -> int:
    try:
        return (run_dir / "attempts.jsonl").read_bytes().count(b"\n")
    except OSError:
        return 0


def _job_id(run_dir: Path) -> str:
    return json.loads((run_dir / "launch.json").read_text())["job_id"]
