"""Beyond one node: a Slurm cluster of two nodes, each a network namespace that reaches no package index and no git
server (helpers/slurm_nodes.py). `launch --backend slurm` prepares the commit on the login node (this machine), so
the jobs fetch nothing; a run on 2 nodes x 1 process ends with the same bits as 2 processes on one machine."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import containers, slurm_nodes
from helpers.generation import DEFAULT_PACKAGE, generate
from helpers.git import IDENTITY, git

pytestmark = pytest.mark.slow

SHORT = ["trainer.max_steps=40", "trainer.eval_every=20", "trainer.ckpt_every=10", "sched.warmup_steps=2",
         "trainer.progress_bar=false", "seed=3"]  # fmt: skip


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurm_nodes.Nodes]:
    try:
        started = slurm_nodes.start(tmp_path_factory.mktemp("nodes"))
    except slurm_nodes.Unavailable as error:
        if containers.required():
            pytest.fail(f"the two-node cluster cannot start, but TEMPLATE_FULL_SUITE=1 (see .ci/run): {error}")
        pytest.skip(f"the two-node cluster cannot start here: {error}")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A default project whose jobs take both nodes, one process each, pushed to a bare remote."""
    root = tmp_path_factory.mktemp("multinode")
    project = generate(root / "project")
    settings = project / "configs" / "launcher" / "slurm.yaml"
    text = settings.read_text().replace("cpus_per_task: 2", "cpus_per_task: 1").replace("mem: 8G", "mem: null")
    text = text.replace('time: "04:00:00"', 'time: "00:20:00"')
    settings.write_text(text + "nodes: 2\nntasks_per_node: 1\n")
    remote = root / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-am", "Jobs on two nodes"], cwd=project, check=True)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=project, check=True)
    subprocess.run(["git", "push", "--quiet", "--set-upstream", "origin", "main"], cwd=project, check=True)
    subprocess.run(["uv", "sync", "--frozen", "--quiet"], cwd=project, check=True)
    return {"root": root, "project": project, "remote": remote}


def finished(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    except (OSError, ValueError, KeyError):
        return False


def test_a_run_on_two_nodes_without_network_equals_two_processes_on_one_machine(
    project: dict[str, Path], nodes: slurm_nodes.Nodes
) -> None:
    env = {**nodes.environment, "RUNS_DIR": str(project["root"] / "runs"), "JOB_CACHE": str(project["root"] / "cache")}
    command = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "launch", "--backend", "slurm", "--", *SHORT]
    launched = subprocess.run(command, cwd=project["project"], env=env, capture_output=True, text=True, timeout=900)
    assert launched.returncode == 0, launched.stdout[-3000:] + launched.stderr[-3000:]
    assert "preparing " in launched.stdout and "submitted 1 run(s)" in launched.stdout, launched.stdout
    (run_dir,) = (project["root"] / "runs" / "dev").iterdir()
    deadline = time.monotonic() + 600
    while not finished(run_dir):
        assert time.monotonic() < deadline, f"the two-node run did not finish\n{nodes.logs()}"
        time.sleep(2)
    provenance = json.loads((run_dir / "provenance.json").read_text())
    environment = provenance["environment"]
    assert (environment.get("SLURM_NNODES"), environment.get("WORLD_SIZE")) == ("2", "2"), environment
    assert provenance["machine"]["hostname"] in slurm_nodes.NODES  # rank 0 ran on a node, not on this machine

    # Its twin: the same run, 2 processes on this machine, through the same job script.
    twin_env = {**os.environ, "RUNS_DIR": str(project["root"] / "twin"), "JOB_CACHE": str(project["root"] / "cache"),
                "NPROC_PER_NODE": "2"}  # fmt: skip
    commit = git(project["project"], "rev-parse", "HEAD")
    job = [str(project["project"] / "jobs" / "job.sh"), str(project["remote"]), commit, run_dir.name, *SHORT]
    twin = subprocess.run(job, env=twin_env, capture_output=True, text=True, timeout=900)
    assert twin.returncode == 0, twin.stderr[-3000:]
    ours = json.loads((run_dir / "summary.json").read_text())["params_sha256"]
    theirs = json.loads((project["root"] / "twin" / "dev" / run_dir.name / "summary.json").read_text())
    assert ours == theirs["params_sha256"]
