"""The Slurm backend: one `sbatch` job array per main tag of a sweep, resources from configs/launcher/slurm.yaml.

Each array task runs jobs/job.sh at the launch commit, reading its run name and overrides from a task file
(`<runs folder>/.launch/<array id>/tasks/<index>`, NUL-separated). Slurm keeps a copy of the batch script and its
arguments, so a requeued task runs its launch commit even after main has moved on. The array is submitted with
`--requeue` (a failed node puts the task back in the queue), `--signal=B:USR2@<grace>` (training saves before the
time limit, exits 75, and job.sh requeues the task) and `--open-mode=append` (a requeued task adds to its log).

Before it submits, the launcher prepares each commit's checkout, submodules and environment in JOB_CACHE
(`job.sh REPO COMMIT --prepare`), here, where the network is: compute nodes often reach no git server and no
package index, and the jobs then find all they need on the shared filesystem.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ...core.errors import UsageError
from ...core.files import utc_now
from ...project import current
from .. import records
from . import Backend, Planned

if TYPE_CHECKING:  # `status` asks squeue without loading Hydra and the run naming
    from ..specs import RunSpec

FLAGS = {"partition": "partition", "time": "time", "nodes": "nodes", "ntasks_per_node": "ntasks-per-node",
         "cpus_per_task": "cpus-per-task", "gpus_per_node": "gpus-per-node", "mem": "mem"}  # fmt: skip


def settings_file() -> Path:
    return current().config_dir / "launcher" / "slurm.yaml"


def settings() -> dict[str, Any]:
    try:
        found = yaml.safe_load(settings_file().read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise UsageError(f"cannot read {settings_file()}: {error}") from None
    unknown = sorted(set(found) - {*FLAGS, "signal_grace_s", "extra"})
    if unknown:
        raise UsageError(
            f"{settings_file()} has unknown settings {unknown}: use {sorted({*FLAGS, 'signal_grace_s', 'extra'})}"
        )
    return found


def check_available() -> None:
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        raise UsageError("sbatch and squeue are not on PATH: launch from a Slurm login node, or use --backend local")


def prepare(repo: str, commit: str, environment: dict[str, str]) -> None:
    """Make the checkout of `commit` and its environment in the jobs' cache, as the jobs will look for it."""
    cache = environment.get("JOB_CACHE") or "the jobs' cache (~/.cache)"
    print(f"preparing {commit[:12]} in {cache} for the compute nodes", flush=True)
    command = [str(current().job_script), repo, commit, "--prepare"]
    done = subprocess.run(command, env=os.environ | environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        raise UsageError(f"preparing {commit[:12]} for the jobs failed, nothing was submitted: {lines[-1]}")


def submit(specs: Sequence[RunSpec], taken: Sequence[tuple[records.Lease, dict[str, Any]]], limit: int | None) -> str:
    """Submit one job array for `specs` (one main tag), record each run's job id, and return the array's id.
    `taken` holds each run's lease and launch record; `limit` caps how many tasks run at once."""
    base = taken[0][1]
    options = settings()
    launch_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"
    folder = Path(base["environment"]["RUNS_DIR"]) / ".launch" / launch_id
    (folder / "tasks").mkdir(parents=True)
    for index, spec in enumerate(specs):  # NUL-separated: overrides may hold spaces and quotes
        (folder / "tasks" / str(index)).write_bytes(b"\0".join(a.encode() for a in (spec.name, *spec.overrides)))
    flags = [f"--{flag}={options[key]}" for key, flag in FLAGS.items() if options.get(key) is not None]
    command = [
        "sbatch",
        "--parsable",
        f"--array=0-{len(specs) - 1}" + (f"%{limit}" if limit else ""),
        "--requeue",
        f"--signal=B:USR2@{int(options.get('signal_grace_s', 120))}",
        "--open-mode=append",
        f"--job-name={specs[0].main_tag}",
        f"--output={folder}/%a.out",
        f"--chdir={current().root}",
        "--export=ALL," + ",".join(f"{key}={value}" for key, value in base["environment"].items()),
        *flags,
        *map(str, options.get("extra") or []),
        str(current().job_script),
        base["repo"],
        base["commit"],
        "--tasks",
        str(folder / "tasks"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UsageError(f"sbatch refused the job array: {done.stderr.strip() or done.stdout.strip()}")
    array = done.stdout.strip().split(";")[0]  # --parsable prints `id` or `id;cluster`
    for index, (lease, record) in enumerate(taken):
        log = str(folder / f"{index}.out")
        records.write(lease.run_dir, record | {"state": "submitted", "job_id": f"{array}_{index}", "log": log})
    return array


class SlurmJobs:
    def __init__(self) -> None:
        self._jobs: dict[str, str] | None = None
        self._asked_at: str | None = None
        self._users = {records.this_user()}  # whose jobs squeue is asked for: ours, and those of shared runs

    def check(self) -> None:
        check_available()
        settings()  # a mistake in configs/launcher/slurm.yaml stops the launch before any planning

    def submit(self, planned: Sequence[Planned], limit: int | None) -> None:
        """One job array per main tag and commit, each commit prepared first."""
        for repo, commit in dict.fromkeys((run.record["repo"], run.record["commit"]) for run in planned):
            environment = next(run.record["environment"] for run in planned if run.record["commit"] == commit)
            prepare(repo, commit, environment)
        for tag, commit in dict.fromkeys((run.spec.main_tag, run.record["commit"]) for run in planned):
            group = [run for run in planned if (run.spec.main_tag, run.record["commit"]) == (tag, commit)]
            array = submit([run.spec for run in group], [(run.lease, run.record) for run in group], limit)
            last = f" to {array}_{len(group) - 1}" if len(group) > 1 else ""
            print(f"submitted {len(group)} run(s) of {tag} as Slurm job array {array} (tasks {array}_0{last})")

    def is_live(self, record: dict[str, Any]) -> bool | None:
        if (user := records.launched_by_someone_else(record)) and user not in self._users:
            self._users.add(user)
            self._asked_at = None  # ask again, for their jobs too
        jobs = self._live_jobs()
        if jobs is not None and record.get("job_id") not in jobs and record.get("submitted_at", "") >= self._asked_at:
            self._asked_at = None  # submitted by another launcher since squeue was asked: ask again
            jobs = self._live_jobs()
        return None if jobs is None else record.get("job_id") in jobs

    def _live_jobs(self) -> dict[str, str] | None:
        """Job id -> state of every job Slurm still knows as queued or running, array tasks one by one."""
        if self._asked_at is None:
            self._asked_at, self._jobs = utc_now(), _squeue(self._users)
        return self._jobs


def backend() -> Backend:
    return SlurmJobs()


def squeue_command(users: set[str]) -> list[str]:
    return ["squeue", "--noheader", "--array", "--format=%i|%T", f"--user={','.join(sorted(users))}"]


def _squeue(users: set[str]) -> dict[str, str] | None:
    if shutil.which("squeue") is None:
        return None
    command = squeue_command(users)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return dict(line.split("|", 1) for line in done.stdout.split() if "|" in line)
