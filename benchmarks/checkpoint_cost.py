"""Checkpoint cost: the project's checkpoint module against the least a durable save can cost.

A save by the module (atomic write, fsync, checksum manifest, pruning to `keep_last`) is timed against `torch.save`
of the same state into a file plus one fsync of that file: without the fsync a save is not durable, so that is the
floor. Loading the latest checkpoint, its checksum verified as a resume does, is timed against `torch.load` of the
same file. The state is float32 tensors in a dict, as a model's and optimizer's state are; the page cache is warm
for both contenders alike.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from types import ModuleType

import torch

from results import Goal, Section, ratio, spread
from timing import Stats, interleaved, timed

GOAL = 1.15


def run(package: str, rounds: int, quick: bool, log: Callable[[str], None]) -> list[Section]:
    checkpoint = import_module("samebits.core.checkpoint")
    sizes_mb = (1, 4) if quick else (10, 200)
    section = Section(
        title="Checkpoint save and load",
        method=f"{rounds} interleaved rounds per size. Save: `CheckpointDir.save` ÷ (`torch.save` to a file + one "
        "fsync). Load: `CheckpointDir.load_latest` (checksum verified, as a resume loads) ÷ `torch.load`. Plain "
        "`torch.save` without fsync is shown for scale.",
        columns=["state", "ours (ms)", "torch.save + fsync (ms)", "torch.save alone (ms)", "save ratio",
                 "ours load (ms)", "torch.load (ms)", "load ratio"],
    )  # fmt: skip
    for size in sizes_mb:
        log(f"checkpoint, {size} MB: {rounds} rounds")
        with tempfile.TemporaryDirectory(prefix="bench-checkpoint-") as scratch:
            found = _measure(checkpoint, _state(size), Path(scratch), rounds, log)
        save = ratio(found["ours"], found["torch.save + fsync"])
        load = ratio(found["ours load"], found["torch.load"])
        section.rows.append(
            [f"{size} MB", *(spread(Stats.of(found[name]), 1000) for name in ("ours", "torch.save + fsync",
             "torch.save")), spread(save), spread(Stats.of(found["ours load"]), 1000),
             spread(Stats.of(found["torch.load"]), 1000), spread(load)]
        )  # fmt: skip
        section.goals += [
            Goal(f"save ≤ {GOAL}× the durable floor, {size} MB", f"{save.median:.2f}", save.median <= GOAL),
            Goal(f"load ≤ {GOAL}× torch.load, {size} MB", f"{load.median:.2f}", load.median <= GOAL),
        ]
    return [section]


def _measure(checkpoint: ModuleType, state: dict, folder: Path, rounds: int, log: Callable) -> dict[str, list[float]]:
    store = checkpoint.CheckpointDir(folder / "checkpoints", 3)
    plain = folder / "plain.pt"
    steps = iter(range(1, 1_000_000))

    def ours() -> float:
        elapsed = timed(lambda: store.save(state, next(steps)))
        store.clean()  # untimed: waits for the old checkpoints' deletion, which must not slow the next contender
        return elapsed

    def durable() -> float:
        def save() -> None:
            with open(plain, "wb") as out:
                torch.save(state, out)
                out.flush()
                os.fsync(out.fileno())

        return timed(save)

    contenders = {
        "ours": ours,
        "torch.save + fsync": durable,
        "torch.save": lambda: timed(lambda: torch.save(state, plain)),
        "ours load": lambda: timed(store.load_latest),  # the checksum verified, as a resume loads it
        "torch.load": lambda: timed(lambda: torch.load(plain, weights_only=True)),
    }
    return interleaved(contenders, rounds, log)


def _state(megabytes: int) -> dict:
    """A model-and-optimizer-like state: tensors of 1 MB each, named as a state dict names them."""
    generator = torch.Generator().manual_seed(0)
    per_tensor = 256 * 1024  # float32: 1 MB
    return {
        "model": {f"layer{k}.weight": torch.randn(per_tensor, generator=generator) for k in range(megabytes)},
        "step": 1,
    }
