"""Checkpoints written off the training path: the step copies its state, one background thread makes it durable.

A save used to block the loop for as long as `torch.save`, its fsync and the checksum took. Now the step only
copies what it hands over (every tensor, into memory of its own, so that training may go on changing the live
ones) and the writer writes that copy with core/checkpoint.py's atomic save, while the loop trains on.

At most one write is in flight: the next save waits for it before it copies anything, so a run never holds more
than one copy of its state besides the live one. The writer only writes; what follows a durable checkpoint (the
trackers publishing its steps, status.json naming it, best.json) is the checkpointer's, on the loop's own thread,
once `finished()` says the write is done (core/checkpointer.py). A write that fails (a full disk) raises where
the loop waits for it.

A kill -9 during a write leaves the previous checkpoint as the latest, as a kill during a blocking save did: the
write in flight never reached the manifest, and the next attempt removes what it left.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .checkpoint import CheckpointDir


def copied(value: Any, memo: dict[tuple[Any, ...], torch.Tensor] | None = None) -> Any:
    """A copy of a state dict that training cannot change: each tensor in memory of its own, on the CPU.

    What `torch.save` would have kept of the live state is kept: tensors that share their memory (tied weights) share
    their copy, and a module's state dict keeps its type and its `_metadata` (each module's version)."""
    memo = {} if memo is None else memo
    if isinstance(value, torch.Tensor):
        try:
            same = (value.device, value.untyped_storage().data_ptr(), value.storage_offset(), value.dtype,
                    value.stride(), tuple(value.shape))  # fmt: skip
        except (RuntimeError, NotImplementedError):  # a tensor without one storage (sparse, say): copied alone
            same = (id(value),)
        if same not in memo:
            memo[same] = value.detach().to("cpu", copy=True)
        return memo[same]
    if isinstance(value, dict):
        items = {key: copied(item, memo) for key, item in value.items()}
        found = OrderedDict(items) if isinstance(value, OrderedDict) else items
        if isinstance(found, OrderedDict) and hasattr(value, "_metadata"):  # a plain dict takes no attribute
            found._metadata = copy.deepcopy(value._metadata)  # type: ignore[attr-defined]
        return found
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(copied(item, memo) for item in value))
    if isinstance(value, list | tuple):
        return type(value)(copied(item, memo) for item in value)
    return copy.deepcopy(value)


@dataclass(frozen=True)
class Write:
    """A checkpoint handed to the writer: its step, the best value it scored if it is the best so far (None
    otherwise), and its outcome."""

    step: int
    best: float | None
    outcome: Future[Path]

    @property
    def name(self) -> str:
        return self.outcome.result().name


class BackgroundWriter:
    def __init__(self, folder: CheckpointDir) -> None:
        self.folder = folder
        self._in_flight: Write | None = None

    def start(self, state: dict[str, Any], step: int, best: float | None) -> None:
        """Write `state`, already copied, as the checkpoint of `step`. The write before it must have been collected."""
        assert self._in_flight is None, "collect the write in flight before starting the next"
        outcome: Future[Path] = Future()

        def write() -> None:
            try:
                outcome.set_result(self.folder.save(state, step))
            except BaseException as error:  # handed to the loop, which raises it where it waits
                outcome.set_exception(error)

        # A thread per write, which ends with it: not a daemon, so an interpreter that exits (an error, a second
        # Ctrl-C) still finishes the write, and no idle worker is left for an exit to wait on.
        threading.Thread(target=write, name=f"checkpoint-writer-{step}").start()
        self._in_flight = Write(step, best, outcome)

    def finished(self) -> bool:
        """Whether a write was started and has ended (collect it), without waiting."""
        return self._in_flight is not None and self._in_flight.outcome.done()

    def collect(self) -> Write | None:
        """Wait for the write in flight, if any, and hand it over, once durable; its error, if it failed."""
        write, self._in_flight = self._in_flight, None
        if write is not None:
            write.outcome.result()
        return write
