"""Run names: readable, unique, and the same every time the same config is run.

A name is `<experiment>__<changed settings>__<hash>`, e.g. `base__lr0.001_seed1__5c2e07aa`:
- `<experiment>` is the chosen `experiment=` option, or `base` without one;
- `<changed settings>` lists the command-line overrides with their resolved values, so `optim.lr=1e-3` and
  `optim.lr=0.001` read the same;
- `<hash>` is the start of the config hash over the run's identity (see `config.identity`), so two different
  configs never share a name even when their readable parts are cut short.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf

from .config import NON_IDENTITY_KEYS, identity
from .hashing import config_sha256

MAX_SUMMARY_CHARS = 80
HASH_CHARS = 8


def run_name(experiment: str | None, overrides: Sequence[str], cfg: DictConfig, choices: Mapping[str, Any]) -> str:
    base = _slug(experiment or "base")
    summary = "_".join(_describe(override, cfg, choices) for override in sorted(_identity_overrides(overrides)))
    digest = config_sha256(identity(cfg))[:HASH_CHARS]
    parts = [base, summary[:MAX_SUMMARY_CHARS].rstrip("_-."), digest]
    return "__".join(part for part in parts if part)


def _identity_overrides(overrides: Sequence[str]) -> list[str]:
    keys = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        excluded = key == "experiment" or any(key == k or key.startswith(f"{k}.") for k in NON_IDENTITY_KEYS)
        if not excluded and not key.startswith("hydra"):
            keys.append(key)
    return keys


def _describe(key: str, cfg: DictConfig, choices: Mapping[str, Any]) -> str:
    if key in choices:  # a config-group choice such as `model=mlp`
        return f"{_slug(key)}-{_slug(str(choices[key]))}"
    value = OmegaConf.select(cfg, key, throw_on_missing=False)
    return f"{_slug(key.rpartition('.')[2])}{_format(value)}"


def _format(value: Any) -> str:
    if isinstance(value, ListConfig | DictConfig):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, list | tuple):
        return "-".join(_format(item) for item in value)
    if isinstance(value, dict):
        return "-".join(f"{k}{_format(v)}" for k, v in sorted(value.items()))
    return _slug(str(value))


def _slug(text: str) -> str:
    """Keep names safe as folder names; `__` stays reserved for separating the parts of a name."""
    return re.sub(r"__+", "_", re.sub(r"[^A-Za-z0-9._+-]+", "-", text)).strip("-_")


def _auto_run_name(*, _root_: DictConfig) -> str:
    hydra = HydraConfig.get()
    return run_name(hydra.runtime.choices.get("experiment"), list(hydra.overrides.task), _root_, hydra.runtime.choices)


OmegaConf.register_new_resolver("auto_run_name", _auto_run_name, replace=True)
