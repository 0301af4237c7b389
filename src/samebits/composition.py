"""The root config schema and Hydra composition, in one place: every command that needs a run's config (the entry
point and its sweep check, the launcher, the proof, the tests) composes it here, from the project's configs/ and
the registered schemas: the trainer's and paths' settings (core/config.py), each tracker's (tracking/settings.py)
and the project's research components' (research/schemas.py).

The run-name resolver (core/naming.py) composes the experiment's own config from inside a composition, within the
search path set up here; both compose through `core.config.compose_train`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import MISSING, DictConfig, OmegaConf, open_dict

from .core.config import PathsConfig, TrainerConfig, compose_train
from .project import current
from .tracking.settings import LoggerConfig


@dataclass
class TrainConfig:
    model: Any = MISSING
    data: Any = MISSING
    objective: Any = MISSING
    optim: Any = MISSING
    sched: Any = MISSING
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    seed: int = 0
    main_tag: str = "dev"
    tags: list[str] = field(default_factory=lambda: ["exploratory"])
    run_name: str = "${auto_run_name:}"


def config_dir() -> str:
    """The project's configs/ folder, once the root schema and the project's research schemas are registered with
    Hydra: every composition (the entry point, a sweep, the launcher, the proof) starts here."""
    return _registered(current().package)


@cache
def _registered(package: str) -> str:
    """Register the schemas once per project: storing them takes longer than composing, and a sweep composes every
    point."""
    store = ConfigStore.instance()
    store.store(name="train_schema", node=TrainConfig)
    current().schemas().register(store)
    return str(current().config_dir)


def composed(overrides: list[str], *, resolve: bool = True, stay_initialized: bool = False) -> DictConfig:
    """The config `python -m <package>.train OVERRIDES` trains with, without its `hydra` node (as the loop sees
    it). Hydra's runtime (the chosen groups) is kept in HydraConfig for the run-name resolver. Unresolved, the
    config may still be changed before its run name resolves; `stay_initialized` keeps Hydra's search path for
    that resolution."""
    GlobalHydra.instance().clear()
    initialize_config_dir(config_dir=config_dir(), version_base="1.3")
    try:
        cfg = compose_train(overrides)
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
        if resolve:
            OmegaConf.resolve(cfg)
    finally:
        if not stay_initialized:
            GlobalHydra.instance().clear()
    return cfg
