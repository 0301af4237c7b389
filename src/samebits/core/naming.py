"""Run names: readable, unique, and the same every time the same config is run.

A name is `<experiment>__<what differs>__<hash>`, e.g. `wide_mlp__lr0.0003_seed1__5c2e07aa`:
- `<experiment>` is the chosen `experiment=` option, or `base` without one;
- `<what differs>` lists the settings whose resolved values differ from that experiment's own config: a
  changed group reads `optim-sgd`, a changed value `lr0.0003`. It depends on values, not on how overrides were
  spelled, so `optim.lr=1e-3`, `optim.lr=0.001` and `+optim.lr=0.001` give one name, and an override to the
  default value changes nothing. A setting that only follows another (`sched.total_steps: ${trainer.max_steps}`)
  is named by the one it follows, once;
- `<hash>` is the start of the config hash over the run's identity (see `config.identity`), so two different
  configs never share a name, even when their readable parts are cut short.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ..project import current, user_cache
from .config import compose_train, flatten, identity, identity_of
from .experiment_config import OwnConfig, own_config
from .hashing import config_sha256

MAX_SUMMARY_CHARS = 80
HASH_CHARS = 8
GROUPS = ("model", "data", "optim", "sched", "trainer")
_PLAIN = re.compile(r"\$\{([\w.]+)\}")  # ${trainer.max_steps}, not a resolver call
_COMPOSING_EXPERIMENT: ContextVar[bool] = ContextVar("composing_experiment", default=False)


def run_name(
    experiment: str | None,
    settings: dict[str, Any],
    choices: Mapping[str, Any],
    base_settings: dict[str, Any],
    base_choices: Mapping[str, Any],
    follows: Mapping[str, str] | None = None,
) -> str:
    """The name of a run with identity `settings`, against the identity of its experiment's own config.

    `follows` maps a setting that is a plain interpolation of another (`sched.total_steps` -> `trainer.max_steps`)
    to its source: while it still has its source's value, only the source is listed."""
    changed_groups = [g for g in GROUPS if choices.get(g) != base_choices.get(g)]
    tokens = [f"{group}-{_slug(str(choices.get(group)))}" for group in changed_groups]
    ours, base = flatten(settings), flatten(base_settings)
    follows = follows or {}
    for key in sorted(ours.keys() | base.keys()):
        if key in follows and ours.get(key) == ours.get(follows[key]):
            continue
        if ours.get(key) != base.get(key) and key.split(".")[0] not in changed_groups:
            tokens.append(f"{_slug(key.rpartition('.')[2])}{_format(ours.get(key))}")
    summary = "_".join(tokens)[:MAX_SUMMARY_CHARS].rstrip("_-.")
    parts = [_slug(experiment or "base"), summary, config_sha256(settings)[:HASH_CHARS]]
    return "__".join(part for part in parts if part)


def followed(cfg: DictConfig | Mapping[str, Any]) -> dict[str, str]:
    """The settings of an unresolved `cfg` (or its container) that are plain interpolations:
    {"sched.total_steps": "trainer.max_steps"}."""
    raw = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else cfg
    assert isinstance(raw, Mapping)
    flat = flatten(raw).items()
    return {key: found.group(1) for key, value in flat if isinstance(value, str) and (found := _PLAIN.fullmatch(value))}


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, list | tuple):
        return "-".join(_format(item) for item in value)
    return _slug(str(value))


def _slug(text: str) -> str:
    """Keep names safe as folder names; `__` stays reserved for separating the parts of a name."""
    return re.sub(r"__+", "_", re.sub(r"[^A-Za-z0-9._+-]+", "-", text)).strip("-_")


@lru_cache(maxsize=16)
def _experiment_config(experiment: str | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """The identity, group choices and followed settings of an experiment with no overrides: what a run's name is
    compared with, composed once per version of the configs (experiment_config.py). (Followed settings come from
    here: by the time a name resolves, its own config may be half resolved.)"""
    sources = [(source.schema, source.path) for source in HydraConfig.get().runtime.config_sources]
    folder = user_cache(current().package) / "configs"
    config, choices = own_config(experiment, sources, folder, lambda: _composed_experiment(experiment))
    return identity_of(config), choices, followed(config)


def _composed_experiment(experiment: str | None) -> OwnConfig:
    overrides = [f"experiment={experiment}"] if experiment else []
    composing = _COMPOSING_EXPERIMENT.set(True)
    try:
        cfg = compose_train(overrides)
    finally:
        _COMPOSING_EXPERIMENT.reset(composing)
    config = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(config, dict)
    del config["hydra"]
    return config, dict(cfg.hydra.runtime.choices)


def _auto_run_name(*, _root_: DictConfig) -> str:
    if _COMPOSING_EXPERIMENT.get():
        # OmegaConf resolves `run_name` while Hydra merges the experiment's own config above. That name is never
        # used; resolving it for real would compose the experiment again, recursively, at every start of a run
        # (docs/decisions/0006-run-name-not-resolved-while-composing.md).
        return "unused"
    hydra = HydraConfig.get()
    choices = dict(hydra.runtime.choices)
    experiment = choices.get("experiment")
    base_settings, base_choices, follows = _experiment_config(experiment)
    return run_name(experiment, identity(_root_), choices, base_settings, base_choices, follows)


OmegaConf.register_new_resolver("auto_run_name", _auto_run_name, replace=True)
