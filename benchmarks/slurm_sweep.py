"""Launcher scale on Slurm: a sweep of 500 tiny runs through one job array with a `%K` throttle, on the template's
two-node test cluster (tests/helpers/slurm_nodes.py: two network namespaces, one CPU each). Goal: `status` under
2 s with every run in some state.

    sudo python benchmarks/slurm_sweep.py [--runs 500] [--throttle 8] [--out benchmarks/slurm_sweep.md]

Run as root (the cluster's daemons and namespaces), from the template's root, in its dev environment (`uv sync`),
with munged running (.ci/run starts it). It generates a default project from this checkout's HEAD, pushes it to a
bare remote and times, as a user would run them:
- `launch --backend slurm --max-concurrent K` of N runs (seed=0..N-1): expanding, naming and checking every point,
  planning, preparing the commit for the nodes, and submitting;
- `status` every 30 s while the sweep runs, with the count of runs in each state at that moment; a few running
  tasks are cancelled on the way (`scancel`: they save and stop, preempted), so that more states are shown;
- the whole sweep: from the launch to the last run finished, or preempted;
- `status` once more at the end, and `launch` again, which relaunches only the cancelled runs.

The figures go to `--out` (Markdown), which `report.py` appends to BENCHMARKS.md. It is not part of `nox -s bench`:
it needs root, and on 2 cores it takes about as many minutes as the runs' start-ups add up to.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import slurm_cluster, slurm_nodes  # noqa: E402
from helpers.generation import DEFAULT_PACKAGE  # noqa: E402

TINY = ["main_tag=scale", "trainer.max_steps=4", "trainer.eval_every=4", "trainer.ckpt_every=2", "trainer.log_every=2",
        "sched.warmup_steps=1", "trainer.progress_bar=false"]  # fmt: skip
STATUS_EVERY_S = 30.0
CANCELLED = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--throttle", type=int, default=8, help="K of --array=0-N%%K (launch --max-concurrent)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "slurm_sweep.md")
    options = parser.parse_args()
    # A daemon may still be writing its state as the folder goes: the figures are written before that.
    with tempfile.TemporaryDirectory(prefix="bench-slurm-sweep-", ignore_cleanup_errors=True) as scratch:
        folder = Path(scratch)
        nodes = slurm_nodes.start(folder / "nodes")
        try:
            lines = measure(nodes, slurm_cluster.pushed_project(folder / "sweep"), options.runs, options.throttle)
        finally:
            nodes.stop()
        options.out.write_text("\n".join(lines) + "\n")
        print("\n".join(lines))


def measure(nodes: slurm_nodes.Nodes, project: dict[str, Path], runs: int, throttle: int) -> list[str]:
    env = {**nodes.environment, "RUNS_DIR": str(project["root"] / "runs"), "JOB_CACHE": str(project["root"] / "cache")}
    command = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE]
    sweep = [*TINY, "seed=" + ",".join(str(seed) for seed in range(runs))]
    launch = [*command, "launch", "--backend", "slurm", "--max-concurrent", str(throttle), "--", *sweep]

    def timed(arguments: list[str]) -> tuple[float, str]:
        started = time.perf_counter()
        done = subprocess.run(arguments, cwd=project["project"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(arguments[5:7])} failed: {done.stderr.strip()[-2000:]}")
        return time.perf_counter() - started, done.stdout

    started = time.monotonic()
    launch_s, _ = timed(launch)
    print(f"launch of {runs} runs: {launch_s:.1f} s", flush=True)
    samples: list[tuple[float, float, Counter[str]]] = []
    cancelled: list[str] = []
    while True:
        status_s, table = timed([*command, "status", "--tag", "scale"])
        states = Counter(line.split()[1] for line in table.splitlines() if line.startswith("scale/"))
        samples.append((time.monotonic() - started, status_s, states))
        print(f"{samples[-1][0]:6.0f} s: status {status_s:.2f} s  {dict(states)}", flush=True)
        if not cancelled and states["finished"] >= runs // 2:
            cancelled = _cancel_running(nodes, CANCELLED)
        if not nodes.run("squeue", "--noheader", check=False).stdout.strip():
            break  # nothing queued or running: every task ended
        time.sleep(STATUS_EVERY_S)
    whole_s = time.monotonic() - started
    again_s, plan = timed(launch)
    relaunched = next((line for line in plan.splitlines() if line.startswith(f"{runs} runs:")), plan.strip()[-200:])
    return report(runs, throttle, launch_s, samples, whole_s, len(cancelled), again_s, relaunched)


def _cancel_running(nodes: slurm_nodes.Nodes, count: int) -> list[str]:
    """Cancel up to `count` running tasks (SIGTERM: each saves and stops, preempted), named `<array>_<task>`: a
    task's own job id may be the array's, which would cancel them all."""
    found = nodes.run("squeue", "--noheader", "--array", "--states=RUNNING", "--format=%i", check=False)
    jobs = found.stdout.split()[:count]
    if jobs:
        nodes.run("scancel", *jobs, check=False)
    return jobs


def report(runs: int, throttle: int, launch_s: float, samples: list[tuple[float, float, Counter[str]]],
           whole_s: float, cancelled: int, again_s: float, relaunched: str) -> list[str]:  # fmt: skip
    slowest = max(status_s for _, status_s, _ in samples)
    lines = [
        "## Launcher at scale on Slurm",
        "",
        f"`benchmarks/slurm_sweep.py`, {time.strftime('%Y-%m-%d')}: a sweep of {runs} tiny runs "
        f"({' '.join(TINY[1:3])}) as one job array with `%{throttle}`, on the two-node test cluster "
        "(one CPU a node, on this 2-core machine). Each figure is one command, timed from the shell, start-up "
        f"included. {cancelled} running tasks were cancelled halfway (`scancel`: they saved and stopped).",
        "",
        "| measure | seconds |",
        "|---|---|",
        f"| `launch` of {runs} runs (expand, name, check, plan, prepare, submit) | {launch_s:.1f} |",
        f"| `status` while the sweep ran, slowest of {len(samples)} | {slowest:.2f} |",
        f"| the whole sweep, from launch to the last task ended | {whole_s:.0f} |",
        f"| `launch` again at the end (plans every run, relaunches the cancelled) | {again_s:.1f} |",
        "",
        f"Goal: `status` under 2 s: {'met' if slowest < 2 else '**missed**'}. The launch again printed: "
        f"`{relaunched}`.",
        "",
        "| time (s) | `status` (s) | runs by state |",
        "|---|---|---|",
        *(f"| {at:.0f} | {status_s:.2f} | {_states(states)} |" for at, status_s, states in samples),
    ]
    return lines


def _states(states: Counter[str]) -> str:
    return ", ".join(f"{count} {state}" for state, count in sorted(states.items(), key=lambda item: -item[1]))


if __name__ == "__main__":
    if os.geteuid() != 0:
        raise SystemExit("run as root: the test cluster's daemons and namespaces need it")
    main()
