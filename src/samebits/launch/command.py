"""`<package> launch`: expand a sweep into runs, decide what each needs, and submit only that.

1. Refuse a dirty tree or a commit the remote lacks (launch/preflight.py): jobs run the commit from the remote.
2. Expand and check every point of the sweep (launch/specs.py).
3. Observe each run and plan SKIP / RELAUNCH / NEW (launch/plan.py); print the plan; stop here with --dry-run.
4. Take each run's lease, observe it again under the lease, and submit the runs still to do through the backend.
   Another launcher working on the same runs holds their leases, so each run is submitted once. A new run runs
   this commit; a relaunched one runs the commit and overrides it was started with, as a requeued job does.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..analysis.tags import missing_note
from ..core.errors import UsageError
from ..core.files import utc_now
from ..core.provenance import git_state
from ..core.run_files import RunFiles
from ..core.runs import runs_root
from ..project import current
from ..tracking.mlflow_store import prepare, sqlite_path
from . import backends, local, records
from .backends import Planned
from .observe import Backends, observe
from .plan import RELAUNCH, SKIP, Step, decide, table
from .preflight import launch_problems
from .specs import RunSpec, expand


def launch(
    overrides: list[str],
    backend: str = "local",
    dry_run: bool = False,
    max_concurrent: int | None = None,
    retry_failed: bool = False,
    force: bool = False,
) -> list[Step]:
    backends.named(backend).check()
    state = git_state(current().root)
    refusals = launch_problems(current().root, state)
    if refusals and not dry_run:
        raise UsageError(*refusals)
    runs = runs_root(current().root)
    specs = expand(overrides)
    for main_tag in dict.fromkeys(spec.main_tag for spec in specs):
        if (warning := missing_note(current().root, main_tag)) is not None:
            print(f"warning: {warning}", flush=True)
    local.advance(runs)
    schedulers = Backends()
    steps = [_step(spec, schedulers, retry_failed, force) for spec in specs]
    print("\n".join(table(steps)), flush=True)
    if dry_run:
        print("dry run: nothing submitted" + "".join(f"; a launch now would stop: {line}" for line in refusals))
        return steps
    todo = [step for step in steps if step.action != SKIP]
    if not todo:
        print("nothing to submit")
        return steps
    schedulers.refresh()  # another launcher may have submitted some of these since they were observed
    taken: list[tuple[Step, records.Lease]] = []
    try:
        for step in todo:  # leases are taken without waiting: launchers never wait on each other
            if (lease := records.Lease.take(step.spec.run_dir)) is None:
                print(f"skipped {step.spec.label}: another launcher or its job holds it")
                continue
            now = _step(step.spec, schedulers, retry_failed, force)
            if now.action == SKIP:
                print(f"skipped {step.spec.label}: {now.why} (since the plan)")
                lease.release()
                continue
            if now.fresh:
                lease = _start_over(lease)
            taken.append((now, lease))
        if taken:
            _prepare_mlflow_stores([step.spec for step, _ in taken])
            _submit(taken, backend, max_concurrent, runs, state)
    finally:
        for _, lease in taken:
            lease.release()
    return steps


def _prepare_mlflow_stores(specs: list[RunSpec]) -> None:
    """Make each new local MLflow store now, once: jobs that start together would race on making its tables."""
    for tracking_uri, artifact_location in dict.fromkeys(spec.mlflow_store for spec in specs if spec.mlflow_store):
        path = sqlite_path(tracking_uri)
        if path is not None and not path.exists():
            print(f"making the MLflow store {path}", flush=True)
            prepare(tracking_uri, artifact_location)


def _step(spec: RunSpec, schedulers: Backends, retry_failed: bool, force: bool) -> Step:
    seen = observe(spec.run_dir, schedulers) if spec.run_dir.is_dir() else None
    return Step(spec, *decide(seen, retry_failed, force))


def _origin(run_dir: Path, record: dict[str, Any]) -> tuple[str, str, list[str]] | None:
    """The repository, commit and overrides the run was started with. A relaunch resumes the run's checkpoint
    with the run's own code, as a requeued job does: training refuses a checkpoint of another commit."""
    if record.get("commit") and record.get("repo"):
        return record["repo"], record["commit"], list(record.get("overrides", []))
    try:  # started without the launcher (job.sh, or train.py in a pushed checkout)
        found = json.loads(RunFiles(run_dir).provenance.read_text())
        git, run = found["git"], found["run"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not git.get("commit") or not git.get("remote_url") or git.get("dirty"):
        return None  # no pushed commit to run: it resumes at this launch's commit, if its checkpoint allows
    return git["remote_url"], git["commit"], [o for o in run.get("overrides", []) if not o.startswith("run_name=")]


def _start_over(lease: records.Lease) -> records.Lease:
    """Set the run's folder aside (kept whole) and lease the fresh folder for the new start."""
    run_dir = lease.run_dir
    aside = run_dir.with_name(f"{run_dir.name}.replaced-{datetime.now(UTC):%Y%m%dT%H%M%S}")
    run_dir.rename(aside)
    lease.release()
    fresh = records.Lease.take(run_dir)
    if fresh is None:
        raise UsageError(f"{run_dir} was taken by another launcher while it started over; {aside} keeps the old run")
    return fresh


def _submit(taken: list[tuple[Step, records.Lease]], backend: str, limit: int | None, runs: Path, state: dict) -> None:
    data = current().root / (os.environ.get("DATA_DIR") or "data")
    environment = {"RUNS_DIR": str(runs.resolve()), "DATA_DIR": str(data.resolve())}
    if os.environ.get("JOB_CACHE"):
        environment["JOB_CACHE"] = str(Path(os.environ["JOB_CACHE"]).resolve())
    submitted_at = utc_now()
    plans = []
    for position, (step, lease) in enumerate(taken):
        before = records.read(lease.run_dir) or {}
        own = _origin(lease.run_dir, before) if step.action == RELAUNCH and not step.fresh else None
        repo, commit, overrides = own or (state["remote_url"], state["commit"], list(step.spec.overrides))
        plans.append(
            Planned(
                step.spec,
                lease,
                {
                    "backend": backend,
                    "user": records.this_user(),
                    "repo": repo,
                    "commit": commit,
                    "run_name": step.spec.name,
                    "main_tag": step.spec.main_tag,
                    "overrides": overrides,
                    "environment": environment,
                    "submitted_at": submitted_at,
                    "position": position,  # the local queue starts runs in sweep order
                    "launches": int(before.get("launches", 0)) + 1,
                },
            )
        )
    backends.named(backend).submit(plans, limit)
