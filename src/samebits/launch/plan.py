"""What `launch` does with each run of a sweep: SKIP, RELAUNCH or NEW, decided from the run's observed state.

- SKIP: queued, pending, running or finished, any run whose job its backend cannot check (squeue failed), and any
  run whose records are damaged (unreadable: the plan names the file).
- RELAUNCH: failed, preempted, lost, interrupted or paused, with no live job: it resumes from its latest
  checkpoint. The plan shows why a run failed: a run that diverged will diverge again at the same commit.
- NEW: never submitted.

With --retry-failed, only runs that were launched before are relaunched: no NEW run is submitted. With --force,
failed and finished runs start over in a fresh folder; the old folder is kept, renamed `<run>.replaced-<time>`.
A run that another user launched into a shared runs folder is never relaunched without --force: its job may be
alive where this user's scheduler queries cannot see it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal, get_args

from ..core.states import BUSY, RESUMABLE, SETTLED
from .observe import Observed
from .records import launched_by_someone_else
from .specs import RunSpec

Action = Literal["NEW", "RELAUNCH", "SKIP"]
NEW, RELAUNCH, SKIP = get_args(Action)


@dataclass(frozen=True)
class Step:
    spec: RunSpec
    action: Action
    why: str  # the run's state, and what would change the decision
    fresh: bool = False  # --force: the old folder is set aside and the run starts over


def decide(seen: Observed | None, retry_failed: bool = False, force: bool = False) -> tuple[Action, str, bool]:
    """(action, why, fresh) for a run observed as `seen` (None: no run folder yet)."""
    if seen is None or (seen.state == "new" and not seen.record):
        return (SKIP, "new: --retry-failed submits no new run", False) if retry_failed else (NEW, "new", False)
    record, state = seen.record or {}, seen.state
    if record.get("backend") and seen.live is None and state not in SETTLED:
        job = f"job {record['job_id']}" if record.get("job_id") else "its job"
        return SKIP, f"unknown: the {record['backend']} backend cannot say whether {job} is alive", False
    if state == "unreadable":
        return SKIP, f"unreadable: {seen.reason}", False  # never guess: it may be running, or finished
    if state in BUSY:
        return SKIP, state + (f" (job {seen.job_id})" if seen.job_id else ""), False
    if state == "finished":
        return (RELAUNCH, "finished: --force starts it over", True) if force else (SKIP, "finished", False)
    if (owner := launched_by_someone_else(record)) and not force and (state == "failed" or state in RESUMABLE):
        return SKIP, f"{state}: someone else's (launched by {owner}): --force relaunches it", False
    if state == "failed":
        why = seen.reason or "no reason recorded"
        return RELAUNCH, f"failed{': --force starts it over' if force else ''} ({why})", force
    if state in RESUMABLE or state == "new":
        at = f" at {record['commit'][:12]}" if record.get("commit") else ""
        return RELAUNCH, (f"{state}: resumes from step {seen.step}{at}" if seen.step else state + at), False
    return SKIP, f"{state}: a state this launcher does not know", False


def table(steps: list[Step]) -> list[str]:
    """One row per run, then the counts per action."""
    width = max((len(step.spec.label) for step in steps), default=3)
    lines = [f"{'action':<9} {'run':<{width}}  state"]
    lines += [f"{step.action:<9} {step.spec.label:<{width}}  {step.why}" for step in steps]
    counts = Counter(step.action for step in steps)
    summary = ", ".join(f"{counts[action]} {action}" for action in (NEW, RELAUNCH, SKIP))
    lines.append(f"{len(steps)} run{'s' * (len(steps) != 1)}: {summary}")
    return lines
