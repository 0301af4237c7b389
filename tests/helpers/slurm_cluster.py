"""A real one-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd from Debian's packages.

`start(folder)` writes a slurm.conf into `folder`, starts the daemons in the foreground as children of the test
process (no systemd here) and waits until the node is idle. `Cluster.stop()` stops exactly the processes it
started, by pid. A munged that already runs is used and left alone. Clients find the cluster through SLURM_CONF.
Outside .ci/run the Slurm tests skip when the cluster cannot start; under it (TEMPLATE_FULL_SUITE=1) they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")


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


def start(folder: Path) -> Cluster:
    if os.geteuid() != 0:
        raise Unavailable("the Slurm daemons need root here")
    missing = [name for name in DAEMONS if shutil.which(name, path="/usr/sbin:/usr/bin:/sbin") is None]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge)")
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool"):
        (folder / sub).mkdir(exist_ok=True)
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
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
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
JobCompLoc={folder}/jobcomp.txt
{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


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
