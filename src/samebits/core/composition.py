"""Hydra composition, in one place: every command that needs a run's config (the entry point's sweep check, the
launcher, the proof, the tests) composes it here, from the project's configs/ and the registered schemas.

The run-name resolver (core/naming.py) composes the experiment's own config from inside a composition; it calls
Hydra's `compose` directly, within the search path set up here.
"""

from __future__ import annotations

from functools import cache

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from ..project import current
from .config import TrainConfig


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
        cfg = compose(config_name="train", overrides=overrides, return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
        if resolve:
            OmegaConf.resolve(cfg)
    finally:
        if not stay_initialized:
            GlobalHydra.instance().clear()
    return cfg
