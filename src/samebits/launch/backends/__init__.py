"""Where a launcher's jobs run. `--backend NAME` picks the module `samebits.launch.backends.NAME`, whose `backend()`
returns a `Backend`: a third backend is one new file in this folder.

A backend starts jobs that run jobs/job.sh at a run's launch record (repo, commit, overrides, environment), hands
each job the run's lease (launch/records.py), and says whether a job it started is still queued or running. What
a run's state is, and what `launch` does about it, is decided for every backend alike (launch/observe.py,
launch/plan.py).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ...core.errors import UsageError

if TYPE_CHECKING:  # `--backend`'s choices are listed without loading the launcher
    from .. import records
    from ..specs import RunSpec


class Planned(NamedTuple):
    spec: RunSpec
    lease: records.Lease  # held: no other launcher or job can take the run meanwhile
    record: dict[str, Any]  # the launch record to write: repo, commit, overrides, environment, ...


class Backend(Protocol):
    def check(self) -> None:
        """Before any planning: raise UsageError for what would stop a submission (missing tools, bad settings)."""

    def submit(self, planned: Sequence[Planned], limit: int | None) -> None:
        """Start or queue a job for each planned run (at most `limit` running at once), write each launch record
        with its job id, and print what was done."""

    def is_live(self, record: dict[str, Any]) -> bool | None:
        """Whether the job of this launch record is still queued or running; None when that cannot be asked.
        A backend object lives for one command: it may ask its scheduler once and keep the answer."""


def names() -> list[str]:
    return sorted(module.name for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_"))


def named(name: str) -> Backend:
    if name not in names():
        raise UsageError(f"--backend {name}: no such backend; pick one of {', '.join(names())}")
    backend: Backend = import_module(f"{__name__}.{name}").backend()
    return backend
