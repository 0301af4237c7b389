"""A sweep's run specs: the name, folder and overrides of every run that `launch` is asked for.

Each point of the sweep is named exactly as the training process will name it. Composing every point with Hydra
would be too slow for large sweeps (docs/decisions/0007-sweep-points-named-without-composing.md), so points are
grouped by the overrides that change the defaults list (config groups,
`experiment=`) and each group is composed once. A point's name then comes from launch/quick_names.py, or, where
its overrides are less plain, from a copy of the group's config with Hydra's own override step applied (what
composition does last anyway). Every point is checked (core/checks.py); points that differ only in `seed` share
their checks. tests/test_launch.py checks the names against a full composition.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from ..composition import composed, config_dir
from ..core import naming  # noqa: F401 (registers the run-name resolver)
from ..core.checks import problems
from ..core.errors import one_line_config_errors
from ..core.sweep import fail_points, points
from ..project import current
from .quick_names import QuickNames


@dataclass(frozen=True)
class RunSpec:
    name: str
    main_tag: str
    run_dir: Path
    overrides: tuple[str, ...]  # this point's overrides, as job.sh passes them to training
    mlflow_store: tuple[str, str] | None = None  # (tracking URI, artifact location) when logger.mlflow is set

    @property
    def label(self) -> str:
        return f"{self.main_tag}/{self.name}"


def expand(overrides: list[str]) -> list[RunSpec]:
    """One spec per distinct run of the sweep, in sweep order; every point is checked before any is returned.
    Points that name the same run (`optim.lr=1e-3,0.001`) give one spec."""
    with one_line_config_errors(f"check the override against `python -m {current().package}.train --cfg job`"):
        every = points(overrides)
        parser = OverridesParser.create()
        by_defaults: dict[tuple[str, ...], list[tuple[int, list[str], list[Override]]]] = {}
        known: dict[str, Override] = {}  # points share most overrides: each is parsed once
        for number, point in enumerate(every, start=1):
            parsed = [known.get(line) or known.setdefault(line, parser.parse_overrides([line])[0]) for line in point]
            shaping = tuple(o.input_line or "" for o in parsed if _shapes_defaults(o))
            later = [o for o in parsed if not _shapes_defaults(o)]
            by_defaults.setdefault(shaping, []).append((number, point, later))
        found: dict[int, RunSpec] = {}
        mistakes: dict[str, list[int]] = {}
        for shaping, members in by_defaults.items():
            base = composed(list(shaping), resolve=False, stay_initialized=True)  # for its group's run names
            quick = QuickNames(base)
            store = _mlflow_store(base)
            checked: dict[tuple[str, ...], list[str]] = {}
            for number, point, later in members:
                named = quick.name(later)
                unchecked = _check_key(later) not in checked
                if named is None or unchecked:
                    cfg = copy.deepcopy(base)
                    ConfigLoaderImpl._apply_overrides_to_config(later, cfg)
                    if named is not None:
                        cfg.run_name = named[0]  # skips the slow resolver; the quick name is the same
                    OmegaConf.resolve(cfg)
                    named = named or (cfg.run_name, cfg.main_tag, Path(cfg.paths.run_dir))
                    if unchecked:  # points that differ in their seed alone share their checks: none reads it
                        checked[_check_key(later)] = problems(cfg, on_this_machine=False)  # login nodes lack GPUs
                for line in checked[_check_key(later)]:
                    mistakes.setdefault(line, []).append(number)
                found[number] = RunSpec(*named, overrides=tuple(point), mlflow_store=store)
        GlobalHydra.instance().clear()
    fail_points(mistakes, len(every))
    unique: dict[Path, RunSpec] = {}
    for number in sorted(found):
        unique.setdefault(found[number].run_dir, found[number])
    return list(unique.values())


def _check_key(overrides: list[Override]) -> tuple[str, ...]:
    return tuple(o.input_line or "" for o in overrides if o.key_or_group != "seed")


def _mlflow_store(cfg: DictConfig) -> tuple[str, str] | None:
    """Where the runs of this defaults list log to MLflow, if they do (`logger=[...,mlflow]` shapes the defaults)."""
    mlflow = cfg.logger.get("mlflow")
    return (mlflow.tracking_uri, mlflow.artifact_location) if mlflow else None


def _shapes_defaults(override: Override) -> bool:
    """Whether Hydra reads `override` while it builds the defaults list (a config group, a package, hydra's own
    settings) rather than applying it to the composed config. Unsure cases count as shaping: that is only slower."""
    key = override.key_or_group
    node: object = ConfigStore.instance().repo
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return (
        override.package is not None
        or key.split("/")[0].split(".")[0] == "hydra"
        or (Path(config_dir()) / key).is_dir()
        or isinstance(node, dict)  # a group of structured configs
    )
