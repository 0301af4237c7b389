"""Run names of sweep points without composing each point, which is too slow for large sweeps (the figures are in
docs/decisions/0007-sweep-points-named-without-composing.md).

A sweep's points that share their config groups differ only in values. Given the composed config of the group
(`base`), the identity of a point is the base's identity with the point's values put in, converted as the
config's types convert them, and copied to the settings that follow them (`sched.total_steps:
${trainer.max_steps}`). Its name then comes from `naming.run_name`, as in training.

`name` returns None for anything less plain (a value that is an interpolation, a key that another setting uses
inside a longer interpolation, an added or deleted key, a changed `paths` or `run_name`): the caller then composes
the point in full. tests/test_launch.py checks both ways against Hydra's own composition.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.types import Override, OverrideType
from omegaconf import DictConfig, ListConfig, OmegaConf

from ..core import naming
from ..core.config import NON_IDENTITY_KEYS, flatten, identity

DEFAULT_RUN_DIR = "${.runs_dir}/${main_tag}/${run_name}"
_REFERENCE = re.compile(r"\$\{([\w.]+)\}")
NOT_NAMED = ("tags", "logger")  # non-identity settings that neither name a run nor place its folder


class QuickNames:
    def __init__(self, base: DictConfig) -> None:
        """`base`: a composed config (without its `hydra` node) while HydraConfig holds its runtime."""
        raw = OmegaConf.to_container(base, resolve=False)
        assert isinstance(raw, dict)
        flat = flatten(raw)
        self.follows = naming.followed(base)  # key -> the key it copies
        self.usable = flat.get("paths.run_dir") == DEFAULT_RUN_DIR  # then the folder is computed here
        # Keys used inside a longer interpolation cannot be put in by hand: their users would need resolving.
        self.entangled = {
            used for key, value in flat.items()
            if isinstance(value, str) and key not in self.follows and key != "paths.run_dir"
            for used in _REFERENCE.findall(value)
        }  # fmt: skip
        self.settings = identity(base)
        self.scratch = copy.deepcopy(base)  # converts values as the config's types do
        self.main_tag, self.runs_dir = str(base.main_tag), Path(base.paths.runs_dir)
        choices = dict(HydraConfig.get().runtime.choices)
        self.experiment, self.choices = choices.get("experiment"), choices
        self.base_settings, self.base_choices, self.base_follows = naming._experiment_config(self.experiment)

    def name(self, overrides: list[Override]) -> tuple[str, str, Path] | None:
        """(run name, main tag, run folder) of the point with these value overrides, or None: compose it."""
        if not self.usable:
            return None
        settings, tag = dict(self.settings), self.main_tag  # _put copies what it changes
        given = {override.key_or_group for override in overrides}  # a given value replaces an interpolation
        for override in overrides:
            key = override.key_or_group
            if override.type is not OverrideType.CHANGE:  # +, ++ and ~: compose in full
                return None
            if key in self.entangled or key.split(".")[0] in ("paths", "run_name"):
                return None
            value = self._converted(key, override.value())
            if value is _UNSURE:
                return None
            if key == "main_tag":
                tag = str(value)
            elif key.split(".")[0] in NOT_NAMED or key in NON_IDENTITY_KEYS:
                continue
            elif not _put(settings, key, value):
                return None
            for follower in (f for f, source in self.follows.items() if source == key and f not in given):
                if not _put(settings, follower, value) and follower.split(".")[0] not in NOT_NAMED:
                    return None
        name = naming.run_name(
            self.experiment, settings, self.choices, self.base_settings, self.base_choices, self.base_follows
        )
        return name, tag, self.runs_dir / tag / name

    def _converted(self, key: str, value: Any) -> Any:
        if isinstance(value, str) and "${" in value:
            return _UNSURE
        try:
            OmegaConf.update(self.scratch, key, value, merge=True)
            node = OmegaConf.select(self.scratch, key, throw_on_missing=True)
        except Exception:  # a wrong type or key: the full composition reports it
            return _UNSURE
        if isinstance(node, DictConfig | ListConfig):
            return OmegaConf.to_container(node, resolve=True)
        return node


_UNSURE = object()


def _put(settings: dict[str, Any], key: str, value: Any) -> bool:
    """Set an existing leaf of the nested `settings`, copying each mapping on its way (the others stay shared with
    the base's settings, which must not change); False where the key is not a leaf."""
    *parents, leaf = key.split(".")
    node = settings
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            return False
        node[part] = node = dict(child)
    if leaf not in node or isinstance(node[leaf], dict):
        return False
    node[leaf] = value
    return True
