"""The run's checkpointer: where a run resumes from, when it saves, and what a save waits for.

It owns the cadence, so that the loop only says where it is: `maybe_save(step, last=..., best=...)` saves every
`trainer.ckpt_every` steps, at the last step, and at a step whose evaluation is the best so far. A save first
checks that the loss has not diverged (a diverged state never reaches a checkpoint) and flushes the trackers'
lines to disk (a checkpoint never covers a step that `metrics.jsonl` lacks). It then copies the state and hands
the copy to a background writer (core/checkpoint_writer.py), and training goes on while the copy is written.
Only once the checkpoint is durable may the trackers publish the steps it covers, status.json name it as the step
a new attempt resumes from, and best.json name it: the checkpointer looks at every step, and waits for the write
at the next save, at the last step and when the run stops (a signal, Ctrl-C, trainer.stop_at_step).
The files themselves (atomic writes, manifest, fallback) are core/checkpoint.py's.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from . import distributed
from .batches import TrainStream
from .best import BestTracker
from .checkpoint import CheckpointDir, CheckpointUnreadable
from .checkpoint_contents import Origin, restore, resume_problems, snapshot
from .checkpoint_writer import BackgroundWriter, copied
from .determinism import capture_rng_state
from .divergence import DivergenceWatch
from .errors import UsageError
from .precision import Precision
from .run_folder import RunFolder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingState:
    """Everything a training step depends on, besides the RNGs: what a checkpoint holds and a resume restores."""

    model: nn.Module
    optimizer: Optimizer
    scheduler: LRScheduler
    precision: Precision
    stream: TrainStream


def resume_latest(
    folder: CheckpointDir,
    state: TrainingState,
    origin: Origin,
    device: torch.device,
    allow_code_change: bool,
    run: RunFolder,
) -> int:
    """Restore the latest valid checkpoint of the run, if it has one (rank 0 finds it, every rank loads it); return
    its step, or 0 for a fresh run. A checkpoint of another config, commit or lock is refused in one line each."""
    context = run.context
    found, unreadable = None, None
    if context.is_main:
        folder.clean()
        try:
            found = folder.find_and_load_latest()  # checked and loaded at once
        except CheckpointUnreadable as error:
            unreadable = str(error)
    # Every rank learns rank 0's outcome before any of them raises: a rank left waiting would hang the job.
    name, unreadable = distributed.from_main(context, (found and found[0], unreadable))
    try:
        if unreadable:
            raise CheckpointUnreadable(unreadable)
        if name is None:
            return 0
        saved = found[1] if found else folder.load(name)
    except CheckpointUnreadable as error:
        raise UsageError(
            f"{error}: resume with the code and lock that wrote it (see its run's config and provenance)"
        ) from None
    if problems := resume_problems(saved, origin, context.world_size, allow_code_change):
        raise UsageError(*problems)
    step = restore(saved, state.model, state.optimizer, state.scheduler, state.precision, state.stream, context.rank,
                   device)  # fmt: skip
    log.info("resumed from the checkpoint at step %d", step)
    return step


@dataclass
class Checkpointer:
    folder: CheckpointDir
    state: TrainingState
    origin: Origin
    every: int  # trainer.ckpt_every
    device: torch.device
    run: RunFolder
    best: BestTracker
    divergence: DivergenceWatch
    flush: Callable[[], None]  # the trackers' lines to disk, before the checkpoint
    publish: Callable[[int], None]  # the steps up to the durable checkpoint may leave the process

    writer: BackgroundWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = BackgroundWriter(self.folder)

    def maybe_save(self, step: int, *, last: bool, best: bool) -> None:
        """Called after every step: saves when one is due, and settles a write that has ended."""
        if step % self.every == 0 or last or best:
            self.save(step, best=best, wait=last)
        elif self.writer.finished():
            self.settle()

    def save(self, step: int, *, best: bool = False, wait: bool = True) -> None:
        """Save the state as of `step`; with `wait`, return once that checkpoint is durable."""
        context = self.run.context
        self.divergence.check()
        self.flush()
        rng = distributed.gather(context, capture_rng_state(self.device))
        self.settle()  # one write in flight at most, and one copy of the state besides the live one
        if context.is_main:
            parts = self.state
            taken = snapshot(parts.model, parts.optimizer, parts.scheduler, parts.precision, parts.stream, rng,
                             self.origin)  # fmt: skip
            self.writer.start(copied(taken), step, self.best.value if best else None)
        if wait:
            self.settle()
        distributed.barrier(context)

    @contextlib.contextmanager
    def finishing_writes(self) -> Iterator[None]:
        """Around the loop: however it ends, the write in flight ends first, and counts if it completed. An
        interpreter that exits on an error would stop it halfway (its checksum needs a thread that an exiting
        interpreter no longer starts), and the run's failure would name an older checkpoint than it has."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):  # the error that ended the loop is the one to report
                self.settle()
            raise

    def settle(self) -> None:
        """Wait for the write in flight; once it is durable, say so to the trackers, status.json and best.json."""
        written = self.writer.collect()
        if written is None:
            return
        if written.best is not None:
            self.best.record(written.name, written.step, written.best)  # kept past keep_last
        self.publish(written.step)
        self.run.record("running", written.step)  # the step a new attempt would resume from, and a sign of life
