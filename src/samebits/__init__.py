"""samebits: one training loop and the machinery around it, for experiment projects that must give the same bits.

A project holds its research code (models, datasets, objectives, schedules and their schemas) and its Hydra
configs; this library holds the loop, checkpoints, determinism, provenance, the launcher, the trackers, run
analysis and the reproducibility proof. What a project imports from it is listed here, and only this is public:

    samebits.entry.train(package)   the entry point behind `python -m <package>.train`
    samebits.cli.main(package)      the console command `<package> SUBCOMMAND`
    Objective                       the protocol an objective implements (how a batch becomes a loss and metrics)
    ArrayDataset, BatchRequest      the dataset contract: what `train`, `val` and a training batch request are
    derive_seed                     a seed for one purpose of one epoch, for a dataset's own randomness
    write_atomic                    write a file whole or not at all (a dataset's cache)
    UsageError                      raise it for a user's mistake: the entry point prints its lines, one
                                    `error: ...` each, and exits with code 2 (no traceback)
    samebits.tracking.Tracker       the protocol a new tracker (configs/logger/) implements
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.batches import ArrayDataset, BatchRequest, derive_seed
    from .core.errors import UsageError
    from .core.files import write_atomic
    from .objective import Objective

try:
    __version__ = version("samebits")
except PackageNotFoundError:  # imported from a source folder that was never installed
    __version__ = "0+unknown"

__all__ = ["ArrayDataset", "BatchRequest", "Objective", "UsageError", "__version__", "derive_seed", "write_atomic"]

# Each public name is imported when first used: the console commands that only read run folders (`status`,
# `launch`'s plan) must not pay for importing torch, which the dataset contract needs.
_PUBLIC = {"ArrayDataset": ".core.batches", "BatchRequest": ".core.batches", "derive_seed": ".core.batches",
           "UsageError": ".core.errors", "write_atomic": ".core.files", "Objective": ".objective"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'samebits' has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value
    return value
