"""The words for where a run stands, each defined once: what an attempt records, and what a command observes.

An attempt's state is what `status.json` says (core/run_folder.py writes it). A run's state is what `status`,
`launch` and `search` see when they put the run folder, the launch record and the backend's live jobs together
(launch/observe.py): an attempt's state, or one that only the launcher knows.
"""

from __future__ import annotations

from typing import Literal, get_args

AttemptState = Literal["running", "finished", "failed", "preempted", "paused", "interrupted"]

# In the order `status` lists them: what needs attention first, settled runs last.
RunState = Literal[
    "running", "pending", "queued", "lost", "preempted", "paused", "interrupted", "failed", "unreadable", "finished",
    "new",
]  # fmt: skip

ATTEMPT_STATES: tuple[AttemptState, ...] = get_args(AttemptState)
RUN_STATES: tuple[RunState, ...] = get_args(RunState)

# Started again, these resume from their latest checkpoint: a relaunch is all they need.
RESUMABLE: frozenset[RunState] = frozenset({"preempted", "lost", "interrupted", "paused"})
# Submitted and not settled: a launcher leaves them alone.
BUSY: frozenset[RunState] = frozenset({"queued", "pending", "running"})
# Ended for good, unless someone starts them over: no job of theirs can still be alive.
SETTLED: frozenset[RunState] = frozenset({"finished", "failed"})
# States that come with a reason worth showing beside them (why it failed, which record is damaged).
EXPLAINED: frozenset[RunState] = frozenset({"failed", "unreadable"})
