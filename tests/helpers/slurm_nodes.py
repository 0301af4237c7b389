"""A real two-node Slurm cluster on one machine: each node a network namespace with its own hostname and address.

`start(folder)` makes a bridge with an address on the host side and, per node, a network namespace joined to it by
a veth pair; slurmctld runs on the host, each slurmd in its node's namespace (and a UTS and mount namespace of its
own: its hostname, and an /etc/hosts that names every node). The nodes reach the host's bridge address and each
other, and nothing else: like many clusters' compute nodes, no package index and no git server. Two partitions
over both nodes, `low` (preemptible, requeued, with a grace time) and `high`, make partition preemption testable.
`Nodes.stop()` stops exactly the daemons it started, by pid, then removes the namespaces and the bridge. Its ports
differ from the one-node cluster's (helpers/slurm_cluster.py), so that both can run at once; .ci/run starts the
one munged both use.

Made as ENVIRONMENT.md measured it to work (Slurm 22.05, cgroup v1): slurmd is started through `nsenter` and
`unshare`, not `ip netns exec`, which remounts /sys and hides the cgroup tree from slurmd.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from helpers.slurm_cluster import Cluster, Unavailable, _daemon, _wait, common_settings, prepare, start_munged

NODES = ("sbn1", "sbn2")
SUBNET = "10.213.47"
HOST_ADDRESS = f"{SUBNET}.1"
TOOLS = ("ip", "nsenter", "unshare", "munged", "slurmctld", "slurmd")


def address(node: str) -> str:
    return f"{SUBNET}.{11 + NODES.index(node)}"


@dataclass
class Nodes(Cluster):
    """The cluster, and what the host was given to make it: removed again by `stop`."""

    bridge: str = ""
    namespaces: list[str] = field(default_factory=list)

    def stop(self) -> None:
        super().stop()
        for namespace in self.namespaces:
            subprocess.run(["ip", "netns", "delete", namespace], capture_output=True, check=False)
        if self.bridge:
            subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, check=False)

    def logs(self) -> str:
        paths = [self.folder / name for name in ("slurmctld.log", *(f"slurmd-{node}.log" for node in NODES))]
        return "\n".join(f"--- {path.name}:\n{path.read_text()[-3000:]}" for path in paths if path.exists())


def start(folder: Path) -> Nodes:
    packages = "iproute2 util-linux slurm-wlm munge"
    prepare(folder, TOOLS, packages, ("state", *(f"spool-{node}" for node in NODES)))
    host = socket.gethostname().split(".")[0]
    (folder / "slurm.conf").write_text(_config(folder, host))
    hosts = "127.0.0.1 localhost\n" + "".join(f"{address(n)} {n}\n" for n in NODES) + f"{HOST_ADDRESS} {host}\n"
    (folder / "hosts").write_text(hosts)
    environment = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    nodes = Nodes(folder, environment, bridge=f"sbbr{os.getpid() % 100000}")
    try:
        _network(nodes)
        start_munged(nodes)
        nodes.processes.append(_daemon(["slurmctld", "-D", "-i"], environment))
        for node in NODES:
            inside = f"hostname {node} && mount --bind {folder / 'hosts'} /etc/hosts && exec slurmd -D -N {node}"
            command = ["nsenter", f"--net=/var/run/netns/{_namespace(nodes, node)}", "unshare", "--uts", "--mount",
                       "sh", "-c", inside]  # fmt: skip
            nodes.processes.append(_daemon(command, environment))
        _wait(lambda: _all_idle(nodes), "the two nodes did not become idle", timeout=90)
    except (Unavailable, subprocess.CalledProcessError) as error:
        nodes.stop()
        raise Unavailable(f"{error}\n{nodes.logs()}") from None
    return nodes


def _namespace(nodes: Nodes, node: str) -> str:
    return f"{nodes.bridge}-{node}"


def _network(nodes: Nodes) -> None:
    def ip(*arguments: str) -> None:
        subprocess.run(["ip", *arguments], check=True, capture_output=True, text=True)

    ip("link", "add", nodes.bridge, "type", "bridge")
    ip("addr", "add", f"{HOST_ADDRESS}/24", "dev", nodes.bridge)
    ip("link", "set", nodes.bridge, "up")
    for index, node in enumerate(NODES):
        namespace, outside, inside = _namespace(nodes, node), f"{nodes.bridge}v{index}", f"{nodes.bridge}p{index}"
        ip("netns", "add", namespace)
        nodes.namespaces.append(namespace)
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", outside, "master", nodes.bridge, "up")
        ip("link", "set", inside, "netns", namespace)
        ip("-n", namespace, "addr", "add", f"{address(node)}/24", "dev", inside)
        ip("-n", namespace, "link", "set", inside, "up")
        ip("-n", namespace, "link", "set", "lo", "up")


def _config(folder: Path, host: str) -> str:
    node_lines = "".join(f"NodeName={node} NodeAddr={address(node)} CPUs=1 State=UNKNOWN\n" for node in NODES)
    low = "PriorityTier=1 GraceTime=60 PreemptMode=REQUEUE"  # preempted by `high`: signalled, then requeued
    return f"""\
ClusterName=templatenodes
SlurmctldHost={host}({HOST_ADDRESS})
SlurmctldPort=6917
SlurmdPort=6918
SlurmdSpoolDir={folder}/spool-%n
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmdLogFile={folder}/slurmd-%n.log
SlurmdParameters=config_overrides
SlurmctldParameters=preempt_send_user_signal
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
{common_settings(folder)}
{node_lines}PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP {low}
PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF
"""


def _all_idle(nodes: Nodes) -> bool:
    if any(process.poll() is not None for process in nodes.processes):
        raise Unavailable("a Slurm daemon exited at start")
    done = nodes.run("sinfo", "--noheader", "--Node", "--format=%N %T", check=False)
    states = dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)
    return done.returncode == 0 and all(states.get(node) == "idle" for node in NODES)
