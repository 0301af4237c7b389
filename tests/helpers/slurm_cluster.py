"""A real one-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd from Debian's packages.

`start(folder)` writes a slurm.conf into `folder`, starts the daemons in the foreground as children of the test
process (no systemd here) and waits until the node is idle. `Cluster.stop()` stops exactly the processes it
started, by pid. A munged that already runs is used and left alone. Clients find the cluster through SLURM_CONF.
Outside .ci/run the Slurm tests skip when the cluster cannot start; under it (TEMPLATE_FULL_SUITE=1) they fail
(`running`, which the test modules' fixtures use for this cluster and for the two-node one, helpers/slurm_nodes.py).
`pushed_project` makes the project those tests launch from.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

from helpers.generation import generate
from helpers.git import IDENTITY

DAEMONS = ("munged", "slurmctld", "slurmd")
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")


ClusterType = TypeVar("ClusterType", bound="Cluster")


class Unavailable(Exception):
    """Slurm cannot start here; the message says why."""


@dataclass
class Cluster:
    folder: Path
    environment: dict[str, str]
    processes: list[subprocess.Popen] = field(default_factory=list)

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command, capture_output=True, text=True, env=self.environment, timeout=60, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(command)} failed: {done.stderr.strip()}")
        return done

    def stop(self) -> None:
        """Cancel the jobs left in this cluster (a failed test may leave some), then stop its daemons by pid."""
        if self.processes and self.processes[-1].poll() is None:
            self.run("scancel", "--full", "--quiet", f"--user={os.getuid()}", check=False)
            _wait(lambda: not self.run("squeue", "--noheader", check=False).stdout.strip(), "jobs to end", 30, False)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def logs(self) -> str:
        return "\n".join(
            f"--- {name}:\n{(self.folder / name).read_text()[-3000:]}"
            for name in ("slurmctld.log", "slurmd.log")
            if (self.folder / name).exists()
        )


def running(start: Callable[[Path], ClusterType], folder: Path) -> Iterator[ClusterType]:
    """A test cluster for a module's tests, stopped after them. Where it cannot start, its tests skip, and under
    TEMPLATE_FULL_SUITE=1 (.ci/run) they fail."""
    try:
        started = start(folder)
    except Unavailable as error:
        if os.environ.get("TEMPLATE_FULL_SUITE") == "1":
            pytest.fail(f"the test cluster cannot start, but TEMPLATE_FULL_SUITE=1 (see .ci/run): {error}")
        pytest.skip(f"the test cluster cannot start here: {error}")
    try:
        yield started
    finally:
        started.stop()


def prepare(folder: Path, tools: tuple[str, ...], packages: str, folders: tuple[str, ...]) -> None:
    """Refuse where the cluster cannot start (not root, tools missing); make its folders."""
    if os.geteuid() != 0:
        raise Unavailable("the Slurm daemons (and network namespaces) need root here")
    missing = [name for name in tools if shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin") is None]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed (apt-get install {packages})")
    for sub in folders:
        (folder / sub).mkdir(parents=True, exist_ok=True)


def start(folder: Path) -> Cluster:
    prepare(folder, DAEMONS, "slurm-wlm munge", ("state", "spool"))
    host = socket.gethostname().split(".")[0]
    (folder / "slurm.conf").write_text(_config(folder, host, _node_line(host)))
    environment = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    cluster = Cluster(folder, environment)
    try:
        start_munged(cluster)
        for daemon in (["slurmctld", "-D", "-i"], ["slurmd", "-D"]):
            cluster.processes.append(_daemon(daemon, environment))
        _wait(lambda: _node_idle(cluster), "the node did not become idle")
    except Unavailable as error:
        cluster.stop()
        raise Unavailable(f"{error}\n{cluster.logs()}") from None
    return cluster


def start_munged(cluster: Cluster) -> None:
    """Use a munged that answers; else start one as a daemon of `cluster`, which stops it."""
    if not _munge_answers():
        MUNGE_SOCKET.parent.mkdir(parents=True, exist_ok=True)
        shutil.chown(MUNGE_SOCKET.parent, "munge", "munge")
        command = ["runuser", "-u", "munge", "--", "munged", "--foreground"]
        cluster.processes.append(_daemon(command, cluster.environment))
        _wait(_munge_answers, "munged did not answer")


def _config(folder: Path, host: str, node: str) -> str:
    return f"""\
ClusterName=templatetest
SlurmctldHost={host}(127.0.0.1)
SlurmdSpoolDir={folder}/spool
SlurmdPidFile={folder}/slurmd.pid
SlurmdLogFile={folder}/slurmd.log
{common_settings(folder)}
{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def common_settings(folder: Path) -> str:
    """The slurm.conf lines every test cluster shares: root daemons, munge, no cgroups, no accounting, a fast
    scheduler, requeue allowed, jobs remembered for 10 minutes."""
    return f"""\
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={folder}/state
SlurmctldPidFile={folder}/slurmctld.pid
SlurmctldLogFile={folder}/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=2,bf_interval=2
MailProg=/bin/true
ReturnToService=2
JobRequeue=1
MinJobAge=600
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={folder}/jobcomp.txt"""


def _node_line(host: str) -> str:
    """The node's own line from `slurmd -C`, with its real CPUs and memory."""
    done = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=False)
    line = next((line for line in done.stdout.splitlines() if line.startswith("NodeName=")), None)
    if line is None:
        raise Unavailable(f"slurmd -C failed: {done.stderr.strip()}")
    return f"NodeName={host} " + " ".join(part for part in line.split() if not part.startswith("NodeName="))


def _daemon(command: list[str], environment: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        command, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _munge_answers() -> bool:
    if not MUNGE_SOCKET.exists():
        return False
    return subprocess.run("munge -n | unmunge", shell=True, capture_output=True, check=False).returncode == 0


def _node_idle(cluster: Cluster) -> bool:
    if any(process.poll() is not None for process in cluster.processes):
        raise Unavailable("a Slurm daemon exited at start")
    done = cluster.run("sinfo", "--noheader", "--format=%T", check=False)
    return done.returncode == 0 and done.stdout.strip() == "idle"


def _wait(ready, what: str, timeout: float = 60, strict: bool = True) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    if strict:
        raise Unavailable(what)


def pushed_project(root: Path, extra_settings: str = "", extras: tuple[str, ...] = ()) -> dict[str, Path]:
    """A default project whose Slurm settings fit the test clusters' nodes (a CPU a task, no memory request, 20
    minutes; `extra_settings` appended), committed, pushed to a bare remote, and synced (with `extras`)."""
    project = generate(root / "project")
    settings = project / "configs" / "launcher" / "slurm.yaml"
    text = settings.read_text().replace("cpus_per_task: 2", "cpus_per_task: 1").replace("mem: 8G", "mem: null")
    settings.write_text(text.replace('time: "04:00:00"', 'time: "00:20:00"') + extra_settings)
    remote = root / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    commit = ["git", *IDENTITY, "commit", "--quiet", "-am", "Slurm settings for the test cluster's nodes"]
    subprocess.run(commit, cwd=project, check=True)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=project, check=True)
    subprocess.run(["git", "push", "--quiet", "--set-upstream", "origin", "main"], cwd=project, check=True)
    extra_flags = [f"--extra={extra}" for extra in extras]
    subprocess.run(["uv", "sync", "--frozen", "--quiet", *extra_flags], cwd=project, check=True)
    return {"root": root, "project": project, "remote": remote}
