"""One run, as the analysis sees it, whatever it was read from: a run folder here, a tracking server elsewhere.

A source (run folders, MLflow, W&B) turns each run into a `RunRecord`; everything downstream (the table, its swept
columns) works on records only, so that a new source is one function that returns them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from omegaconf import OmegaConf

from ..core.config import flatten, identity

SEED = "seed"


@dataclass(frozen=True)
class RunRecord:
    name: str
    main_tag: str
    tags: tuple[str, ...]  # what the run is for: exploratory, candidate
    state: str
    commit: str | None
    config_sha256: str | None
    settings: dict[str, object]  # flattened identity settings: {"optim.lr": 0.001, "seed": 0}
    metrics: dict[str, float]  # final value of each metric
    step: int | None = None


def identity_settings(config: Mapping[str, object]) -> dict[str, object]:
    """The settings of a saved, resolved config that decide what a run computes, as dotted keys: exactly what
    training, naming and the launcher take as the run's identity (`core.config.identity`)."""
    return flatten(identity(OmegaConf.create(dict(config))))


def swept_columns(settings_by_run: Mapping[str, Mapping[str, object]]) -> list[str]:
    """The settings whose values differ among the runs, in the order the runs' configs list them, with `seed` last:
    the columns that tell the runs of a sweep apart. A setting some runs lack differs too; a run with no settings
    at all (queued, its config not written yet) is not compared."""
    known = [settings for settings in settings_by_run.values() if settings]
    seen: dict[str, set[str]] = {}
    for settings in known:
        for key, value in settings.items():
            seen.setdefault(key, set()).add(_comparable(value))
    swept = [key for key, values in seen.items() if len(values) > 1 or any(key not in found for found in known)]
    return [key for key in swept if key != SEED] + [key for key in swept if key == SEED]


def display(value: object) -> object:
    """A setting as one table cell: lists become text, so that CSV and parquet read back what was written."""
    return json.dumps(value) if isinstance(value, list | tuple | dict) else value


def _comparable(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)
