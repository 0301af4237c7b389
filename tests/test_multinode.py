"""Beyond one node: a Slurm cluster of two nodes, each a network namespace that reaches no package index and no git
server (helpers/slurm_nodes.py). `launch --backend slurm` prepares the commit on the login node (this machine), so
the jobs fetch nothing. A run on 2 nodes x 1 process ends with the same bits as 2 processes on one machine, and so
does one preempted mid-run by a job of a higher-priority partition, and one requeued mid-run, each step logged
once."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import slurm_cluster, slurm_nodes
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
    """A default project whose jobs take both nodes, one process each, pushed to a bare remote."""
    return slurm_cluster.pushed_project(tmp_path_factory.mktemp("multinode"), "nodes: 2\nntasks_per_node: 1\n")


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


def launch(project: dict[str, Path], nodes: slurm_nodes.Nodes, runs: str, **extra: str) -> Path:
    """Launch SHORT onto both nodes; the run's folder."""
    env = {**nodes.environment, "RUNS_DIR": str(project["root"] / runs), "JOB_CACHE": str(project["root"] / "cache")}
    command = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "launch", "--backend", "slurm", "--", *SHORT]
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


def logged_steps(run_dir: Path) -> list[int]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row["step"] for row in rows if "train/loss" in row]


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
    admin or a failed node does. Either way the run saves, waits in the queue, and resumes on both nodes."""
    marker = project["root"] / f"paused-{interruption}"
    pausing = {"REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    run_dir = launch(project, nodes, interruption, **pausing)
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
    assert (run_dir / "attempts.jsonl").read_text().count("\n") >= 1  # the restart is recorded
    assert json.loads((run_dir / "summary.json").read_text())["params_sha256"] == twin_params(project, run_dir.name)
