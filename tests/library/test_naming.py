"""Run names: one config gives one name, and different configs give different names."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from typing import Any

import pytest
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf, ValidationError

from library.helpers.compose import composed
from library.helpers.project import ROOT

naming = import_module("samebits.core.naming")
config = import_module("samebits.core.config")
composition = import_module("samebits.composition")
hashing = import_module("samebits.core.hashing")

EXPERIMENTS = sorted(path.stem for path in (ROOT / "configs" / "experiment").glob("*.yaml"))
# The only settings that may change without changing a run's name and hash: where a run writes, what it logs and
# how it is scheduled. Listed here on purpose, apart from config.NON_IDENTITY_KEYS: a setting that joins that
# list must be added here too, deliberately, or the test below fails.
NEVER_NAMED = (
    "paths.",
    "logger.",
    "main_tag",
    "tags",
    "trainer.num_workers",
    "trainer.progress_bar",
    "trainer.log_every",
    "trainer.eval_every",
    "trainer.ckpt_every",
    "trainer.keep_last",
    "trainer.stop_at_step",
    "trainer.allow_code_change",
    "trainer.best_metric",
    "trainer.best_mode",
)
# Settings left out of the identity while they hold the value that computes what runs computed before they
# existed (config.NEUTRAL_DEFAULTS), so that older runs keep their names; any other value is named.
NAMED_UNLESS_NEUTRAL = {
    "trainer.precision",
    "trainer.accumulate_grad_batches",
    "trainer.compile",
    "data.test_fraction",
    "data.test_every",
}
# A value other than the default that the setting accepts, where a generic change would not be one.
OTHER_VALUE = {"trainer.precision": "bf16", "trainer.device": "cuda"}


def name(*overrides: str) -> str:
    return composed(*overrides).run_name


def test_same_config_same_name_whatever_the_spelling() -> None:
    assert name("optim.lr=1e-3", "seed=1") == name("seed=1", "optim.lr=0.001")
    assert name("optim.lr=0.003") == name()  # the default value, overridden: the same config


def test_name_reads_the_experiment_and_what_differs_from_it() -> None:
    assert re.fullmatch(r"base__[0-9a-f]{8}", name())
    assert re.fullmatch(r"wide_mlp__lr0.0003__[0-9a-f]{8}", name("experiment=wide_mlp", "optim.lr=3e-4"))
    assert re.fullmatch(r"base__optim-sgd_seed2__[0-9a-f]{8}", name("optim=sgd", "seed=2"))


def test_a_setting_that_follows_another_is_named_once() -> None:
    """sched.total_steps follows trainer.max_steps: the name lists max_steps, not both (the hash covers both)."""
    assert re.fullmatch(r"base__max_steps100__[0-9a-f]{8}", name("trainer.max_steps=100"))
    assert re.fullmatch(
        r"base__total_steps50_max_steps100__[0-9a-f]{8}", name("trainer.max_steps=100", "sched.total_steps=50")
    )


def test_infrastructure_does_not_rename_a_run() -> None:
    assert name("trainer.num_workers=2", "trainer.progress_bar=false") == name()


def test_trainer_switches_name_a_run_only_when_they_change_what_it_computes() -> None:
    """At their defaults the switches are left out of the identity, so runs named before they existed keep their
    names (and resume) after an update; switched on, they are named and hashed like any setting."""
    defaults = ("trainer.precision=32", "trainer.accumulate_grad_batches=1", "trainer.compile=false")
    assert name(*defaults) == name()
    config = import_module("samebits.core.config")
    assert not {"precision", "accumulate_grad_batches", "compile"} & set(config.identity(composed())["trainer"])
    assert re.fullmatch(r"base__precisionbf16__[0-9a-f]{8}", name("trainer.precision=bf16"))
    assert re.fullmatch(r"base__accumulate_grad_batches2__[0-9a-f]{8}", name("trainer.accumulate_grad_batches=2"))
    assert re.fullmatch(r"base__compiletrue__[0-9a-f]{8}", name("trainer.compile=true"))


def test_a_sweep_of_200_configs_gets_200_names() -> None:
    """Named as the launcher names them: one composition per defaults list, the same names as training gives
    (test_launch.py compares the two), in seconds instead of 40."""
    specs = import_module("samebits.launch.specs")
    sweep = ["optim.lr=1e-4,3e-4,1e-3,3e-3,1e-2", "model.hidden_sizes=[32],[64],[128],[256]", "seed=range(10)"]
    assert len({spec.name for spec in specs.expand(sweep)}) == 200
    assert len({name(f"optim.lr={lr}", f"seed={seed}") for lr in (1e-4, 1e-3) for seed in range(5)}) == 10


@contextmanager
def unresolved(*overrides: str) -> Iterator[DictConfig]:
    """A composed config, unresolved: each setting can be changed, and the run name then resolved, as the loop
    does (composing a config per setting would take 0.4 s each)."""
    try:
        yield composition.composed(list(overrides), resolve=False, stay_initialized=True)
    finally:
        GlobalHydra.instance().clear()


def never_named(key: str) -> bool:
    return any(key == entry or entry.endswith(".") and key.startswith(entry) for entry in NEVER_NAMED)


def other_value(key: str, value: Any) -> Any:
    """A different value of the same type; None when no value can be told for this setting."""
    if key in OTHER_VALUE:
        return OTHER_VALUE[key]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2 if value else 0.1
    if isinstance(value, str):
        return f"{value}_other"
    if isinstance(value, list) and value:
        return [other_value(key, value[0]), *value[1:]]
    return None


def with_setting(cfg: DictConfig, key: str, value: Any) -> DictConfig | None:
    """`cfg` with `key` set to `value`, or None if the schema refuses the value."""
    changed = copy.deepcopy(cfg)
    try:
        OmegaConf.update(changed, key, value, merge=False)
    except ValidationError:
        return None
    return changed


def identified(cfg: DictConfig) -> tuple[str, str, str]:
    """The run name, the hash in it, and the config hash (provenance.json's config_sha256) of `cfg`."""
    name = str(cfg.run_name)
    return name, name.rpartition("__")[2], hashing.config_sha256(config.identity(cfg))


@pytest.mark.parametrize("experiment", [None, *EXPERIMENTS])
def test_every_setting_but_infrastructure_changes_the_name_and_the_hash(experiment: str | None) -> None:
    """Every leaf setting of the config, changed to another value of its type: the run's name, the hash in the
    name and the config hash all change, unless the setting is one of NEVER_NAMED, which change none of them."""
    overrides = [f"experiment={experiment}"] if experiment else []
    with unresolved(*overrides) as cfg:
        base = identified(cfg)
        leaves = config.flatten(OmegaConf.to_container(cfg, resolve=True))
        assert "seed" in leaves and "trainer.grad_clip_norm" in leaves and "optim.lr" in leaves
        identity = config.flatten(config.identity(cfg))
        left_out = {key for key in leaves.keys() - identity.keys() if not never_named(key)} - {"run_name"}
        assert left_out <= NAMED_UNLESS_NEUTRAL, f"left out of the identity at their defaults: {left_out}"
        unchanged, renamed, untried = [], [], []
        for key, value in leaves.items():
            if key == "run_name":
                continue
            infrastructure = never_named(key)
            candidates = [other_value(key, value)] if value is not None else [1, 0.5, "other", True]
            variant = next((v for c in candidates if c is not None and (v := with_setting(cfg, key, c))), None)
            if variant is None:
                untried += [] if infrastructure else [key]  # a tracker left off (logger.wandb: null), say
                continue
            found = identified(variant)
            if infrastructure:
                renamed += [key] if found != base else []
            else:
                unchanged += [f"{key} ({what})" for what, a, b in zip(("name", "name's hash", "config hash"),
                                                                       found, base, strict=True) if a == b]  # fmt: skip
    assert untried == [], f"no other value to try for {untried}: add one to OTHER_VALUE"
    assert unchanged == [], f"changed, these settings left the run's identity as it was: {unchanged}"
    assert renamed == [], f"these settings are infrastructure, yet they changed the run's identity: {renamed}"


@pytest.mark.parametrize(("key", "value"), [("seed", 1), ("trainer.grad_clip_norm", 0.5), ("sched.total_steps", 300)])
def test_a_setting_changed_in_place_names_the_run_as_its_override_does(key: str, value: object) -> None:
    """The test above changes settings in the composed config; here, that gives the name an override gives."""
    with unresolved() as cfg:
        variant = with_setting(cfg, key, value)
        assert variant is not None
        in_place = identified(variant)
    assert in_place[0] == name(f"{key}={value}")
