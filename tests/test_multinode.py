"""Beyond one node: a Slurm cluster of two nodes, each a network namespace that reaches no package index and no git
server (helpers/slurm_nodes.py). `launch --backend slurm` prepares the commit on the login node (this machine), so
the jobs fetch nothing. A run on 2 nodes x 1 process ends with the same bits as 2 processes on one machine, and so
does one preempted mid-run by a job of a higher-priority partition, and one requeued mid-run, each step logged
once. A requeue storm interrupts every run of a 20-run array 3 times, with every tracker on
(helpers/requeue_storm.py)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import requeue_storm, slurm_cluster, slurm_nodes
from helpers.generation import DEFAULT_PACKAGE
from helpers.git import git

pytestmark = pytest.mark.slow

SHORT = ["trainer.max_steps=40", "trainer.eval_every=20", "trainer.ckpt_every=10", "sched.warmup_steps=2",
         "trainer.progress_bar=false", "seed=3"]  # fmt: skip


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurm_nodes.Nodes]:
    yield from slurm_cluster.running(slurm_nodes.start, tmp_path_factory.mktemp("nodes"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A default project whose jobs take both nodes, one process each, pushed to a bare remote, with MLflow."""
    settings = "nodes: 2\nntasks_per_node: 1\n"
    return slurm_cluster.pushed_project(tmp_path_factory.mktemp("multinode"), settings, extras=("mlflow",))


def state(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "status.json").read_text())["state"]
    except (OSError, ValueError, KeyError):
        return None


def wait_until(ready: Callable[[], bool], what: str, nodes: slurm_nodes.Nodes, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{nodes.logs()}"
        time.sleep(1)


def launch(project: dict[str, Path], nodes: slurm_nodes.Nodes, runs: str, *overrides: str, **extra: str) -> Path:
    """Launch SHORT (and `overrides`) onto both nodes; the run's folder."""
    env = {**nodes.environment, "RUNS_DIR": str(project["root"] / runs), "JOB_CACHE": str(project["root"] / "cache")}
    command = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "launch", "--backend", "slurm", "--", *SHORT,
               *overrides]  # fmt: skip
    done = subprocess.run(command, cwd=project["project"], env=env | extra, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "preparing " in done.stdout and "submitted 1 run(s)" in done.stdout, done.stdout
    (run_dir,) = (project["root"] / runs / "dev").iterdir()
    return run_dir


def twin_params(project: dict[str, Path], name: str) -> str:
    """The run `name` trained by 2 processes on this machine, through the same job script (once per module)."""
    summary = project["root"] / "twin" / "dev" / name / "summary.json"
    if not summary.exists():
        env = {**os.environ, "RUNS_DIR": str(project["root"] / "twin"), "JOB_CACHE": str(project["root"] / "cache"),
               "NPROC_PER_NODE": "2"}  # fmt: skip
        commit = git(project["project"], "rev-parse", "HEAD")
        job = [str(project["project"] / "jobs" / "job.sh"), str(project["remote"]), commit, name, *SHORT]
        done = subprocess.run(job, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(summary.read_text())["params_sha256"]


MLFLOW, EVERY_TRACKER = "logger=[jsonl,mlflow]", "logger=[jsonl,wandb,mlflow]"


def rows(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def series(table: list[dict[str, float]], key: str, step: str = "step") -> list[tuple[int, float]]:
    return [(int(row[step]), row[key]) for row in table if key in row]


def mlflow_series(store: Path, run_name: str) -> dict[str, list[tuple[int, float]]]:
    """Metric -> every (step, value) MLflow holds for the run, read from its sqlite store."""
    query = "SELECT m.key, m.step, m.value FROM metrics m JOIN runs r ON m.run_uuid = r.run_uuid WHERE r.name = ?"
    with sqlite3.connect(store) as connection:
        found: dict[str, list[tuple[int, float]]] = {}
        for key, step, value in connection.execute(query, (run_name,)):
            found.setdefault(key, []).append((step, value))
    return {key: sorted(values) for key, values in found.items()}


def assert_each_step_once_in_every_tracker(run_dir: Path, mlflow_store: Path) -> None:
    """What metrics.jsonl holds, MLflow holds too, each step once; so does wandb where the run used it."""
    from samebits.tracking import wandb_files

    logged, ids = rows(run_dir), json.loads((run_dir / "trackers.json").read_text())
    in_mlflow = mlflow_series(mlflow_store, run_dir.name)
    in_wandb = wandb_files.history(run_dir / "wandb", ids["wandb"]) if "wandb" in ids else None
    for key in {key for row in logged for key in row} - {"step"}:
        assert in_mlflow.get(key) == series(logged, key), (run_dir, key)
        if in_wandb is not None:
            assert series(in_wandb, key, "global_step") == series(logged, key), (run_dir, key)


def logged_steps(run_dir: Path) -> list[int]:
    return [row["step"] for row in rows(run_dir) if "train/loss" in row]


def test_a_run_on_two_nodes_without_network_equals_two_processes_on_one_machine(
    project: dict[str, Path], nodes: slurm_nodes.Nodes
) -> None:
    run_dir = launch(project, nodes, "runs")
    wait_until(lambda: state(run_dir) == "finished", "the two-node run to finish", nodes)
    provenance = json.loads((run_dir / "provenance.json").read_text())
    environment = provenance["environment"]
    assert (environment.get("SLURM_NNODES"), environment.get("WORLD_SIZE")) == ("2", "2"), environment
    assert provenance["machine"]["hostname"] in slurm_nodes.NODES  # rank 0 ran on a node, not on this machine
    assert json.loads((run_dir / "summary.json").read_text())["params_sha256"] == twin_params(project, run_dir.name)


@pytest.mark.parametrize("interruption", ["preemption", "requeue"])
def test_a_two_node_run_interrupted_mid_run_resumes_with_its_twins_bits(
    project: dict[str, Path], nodes: slurm_nodes.Nodes, interruption: str
) -> None:
    """Preemption: the low partition is preemptible (requeue, with a grace time), and a job in `high` that needs
    both nodes takes them; the run gets its --signal (preempt_send_user_signal). Requeue: `scontrol requeue`, as an
    admin or a failed node does. Either way the run saves, waits in the queue, and resumes on both nodes; the
    preempted one, with wandb and MLflow on, sends each step to every tracker once."""
    marker = project["root"] / f"paused-{interruption}"
    pausing = {"REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    trackers = [EVERY_TRACKER] if interruption == "preemption" else []  # each tracker adds to every attempt's start
    run_dir = launch(project, nodes, interruption, *trackers, **pausing)
    wait_until(marker.exists, "the run to pause at step 20", nodes)
    job_id = json.loads((run_dir / "launch.json").read_text())["job_id"]
    if interruption == "preemption":
        output = f"--output={nodes.folder / 'high-%j.out'}"  # not slurm-<id>.out in the checkout under test
        nodes.run("sbatch", "--partition=high", "--nodes=2", "--ntasks-per-node=1", output, "--wrap", "sleep 2")
    else:
        nodes.run("scontrol", "requeue", job_id)
    wait_until(lambda: state(run_dir) == "preempted", f"the run to save and stop on the {interruption}", nodes)
    assert json.loads((run_dir / "status.json").read_text())["step"] == 20

    def requeued() -> bool:
        found = nodes.run("squeue", "--noheader", "--format=%T", "--job", job_id, check=False).stdout
        return "PENDING" in found or state(run_dir) != "preempted"

    wait_until(requeued, "the job to be requeued", nodes)
    time.sleep(5)  # sooner after a requeue, Slurm fails the job instead of starting it (tests/test_launch.py)
    nodes.run("scontrol", "update", f"JobId={job_id}", "StartTime=now", check=False)  # a requeue waits otherwise
    wait_until(lambda: state(run_dir) == "finished", "the interrupted run to finish", nodes)
    assert logged_steps(run_dir) == list(range(10, 41, 10))  # each step once
    if trackers:
        assert_each_step_once_in_every_tracker(run_dir, project["root"] / interruption / "mlflow.db")
    assert (run_dir / "attempts.jsonl").read_text().count("\n") >= 1  # the restart is recorded
    assert json.loads((run_dir / "summary.json").read_text())["params_sha256"] == twin_params(project, run_dir.name)


# 20 runs interrupted 3 times each is 80 training processes started on 2 CPUs (BENCHMARKS.md has its time): CI runs a
# storm of 6 runs (the same test, one variable); TEMPLATE_STORM_RUNS=20 runs the full one. An attempt trains up to
# 50 steps past its resume step before the storm interrupts it, plus what it trains while the storm notices (a
# step is a few ms): 600 steps leave room for 3 interruptions before the run could end.
STORM_RUNS, STORM_INTERRUPTIONS = int(os.environ.get("TEMPLATE_STORM_RUNS", "6")), 3
STORM = ["main_tag=storm", "trainer.max_steps=600", "trainer.eval_every=300", "trainer.ckpt_every=10",
         "trainer.log_every=10", "sched.warmup_steps=2", "trainer.progress_bar=false"]  # fmt: skip


@pytest.fixture(scope="module")
def storm_project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A default project whose jobs take one CPU of one node (two run at once, one on each), with MLflow."""
    return slurm_cluster.pushed_project(tmp_path_factory.mktemp("storm"), extras=("mlflow",))


def test_a_requeue_storm_leaves_every_run_with_its_twins_bits_and_each_step_once(
    storm_project: dict[str, Path], nodes: slurm_nodes.Nodes
) -> None:
    """An array of runs, each interrupted 3 times mid-run (scontrol requeue, preemption by the high partition,
    scancel --signal=USR2), at moments drawn by the test: every run ends with the bits and the logged losses of its
    twin (the same sweep trained uninterrupted, in one process with -m), each step once in metrics.jsonl and in
    MLflow; `status` counts 3 restarts each, and launching the sweep again submits nothing."""
    root, project = storm_project["root"], storm_project["project"]
    seeds = "seed=" + ",".join(str(seed) for seed in range(STORM_RUNS))
    command = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE]
    env = {**nodes.environment, "RUNS_DIR": str(root / "runs"), "JOB_CACHE": str(root / "cache")}
    twins_env = {**os.environ, "RUNS_DIR": str(root / "twins")}
    twins_command = [*command[:-1], "python", "-m", f"{DEFAULT_PACKAGE}.train", "-m", *STORM, seeds]
    with (root / "twins.log").open("w") as log:  # trained meanwhile, on this machine
        twins = subprocess.Popen(twins_command, cwd=project, env=twins_env, stdout=log, stderr=subprocess.STDOUT)
    try:
        launch = [*command, "launch", "--backend", "slurm", "--max-concurrent", "4", "--", *STORM, MLFLOW, seeds]
        done = subprocess.run(launch, cwd=project, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0 and f"submitted {STORM_RUNS} run(s)" in done.stdout, done.stdout + done.stderr
        run_dirs = sorted(path for path in (root / "runs" / "storm").iterdir() if path.is_dir())
        assert len(run_dirs) == STORM_RUNS
        seed = int(os.environ.get("STORM_SEED", random.randrange(10**6)))
        print(f"requeue storm: STORM_SEED={seed} repeats this storm's draws")
        rng = random.Random(seed)
        targets = requeue_storm.plans(run_dirs, STORM_INTERRUPTIONS, rng)
        started = time.monotonic()
        requeue_storm.storm(nodes, targets, rng)
        print(f"requeue storm: {STORM_RUNS} runs, {STORM_RUNS * STORM_INTERRUPTIONS} interruptions, "
              f"{time.monotonic() - started:.0f} s from submission to the last run finished")  # fmt: skip
        twins.wait(timeout=900)
    finally:
        twins.kill()
    assert twins.returncode == 0, (root / "twins.log").read_text()[-3000:]

    assert all(len(target.delivered) == STORM_INTERRUPTIONS for target in targets), [t.delivered for t in targets]
    for run_dir in run_dirs:
        twin = root / "twins" / "storm" / run_dir.name
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["params_sha256"] == json.loads((twin / "summary.json").read_text())["params_sha256"], run_dir
        assert rows(run_dir) == rows(twin), run_dir  # each step once, every logged loss bit for bit
        assert_each_step_once_in_every_tracker(run_dir, root / "runs" / "mlflow.db")
        # Slurm started the task once per interruption and once more: no requeue reached a task that the storm
        # did not interrupt (as one of its array's did, when job.sh named its job by the array's own id).
        attempts = (run_dir / "attempts.jsonl").read_text().splitlines()
        assert json.loads(attempts[-1])["slurm"]["restart_count"] == str(STORM_INTERRUPTIONS), run_dir

    status = subprocess.run([*command, "status", "--tag", "storm"], cwd=project, env=env, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    shown = [line.split() for line in status.stdout.splitlines() if line.startswith("storm/")]
    assert len(shown) == STORM_RUNS, status.stdout + status.stderr
    for row in shown:  # run, state, step, [last evaluation...], job, restarts, updated ("12s ago")
        assert row[1] == "finished" and row[-3] == str(STORM_INTERRUPTIONS), status.stdout
    again = subprocess.run(launch, cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "submitted" not in again.stdout, again.stdout + again.stderr
    print(status.stdout)
