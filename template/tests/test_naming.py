"""Run names: one config gives one name, and different configs give different names."""

from __future__ import annotations

import re
from importlib import import_module

import pytest
from hydra.core.hydra_config import HydraConfig

from conftest import PACKAGE
from test_config import composed

naming = import_module(f"{PACKAGE}.core.naming")


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
    config = import_module(f"{PACKAGE}.core.config")
    assert not {"precision", "accumulate_grad_batches", "compile"} & set(config.identity(composed())["trainer"])
    assert re.fullmatch(r"base__precisionbf16__[0-9a-f]{8}", name("trainer.precision=bf16"))
    assert re.fullmatch(r"base__accumulate_grad_batches2__[0-9a-f]{8}", name("trainer.accumulate_grad_batches=2"))
    assert re.fullmatch(r"base__compiletrue__[0-9a-f]{8}", name("trainer.compile=true"))


def test_a_sweep_of_200_configs_gets_200_names() -> None:
    """Named as the launcher names them: one composition per defaults list, the same names as training gives
    (test_launch.py compares the two), in seconds instead of 40."""
    specs = import_module(f"{PACKAGE}.launch.specs")
    sweep = ["optim.lr=1e-4,3e-4,1e-3,3e-3,1e-2", "model.hidden_sizes=[32],[64],[128],[256]", "seed=range(10)"]
    assert len({spec.name for spec in specs.expand(sweep)}) == 200
    assert len({name(f"optim.lr={lr}", f"seed={seed}") for lr in (1e-4, 1e-3) for seed in range(5)}) == 10


def test_naming_a_run_composes_its_experiment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The experiment's own config is composed once per name, not again from inside that composition."""
    calls: list[list[str]] = []

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(list(kwargs.get("overrides", [])))  # type: ignore[arg-type]
        return compose(*args, **kwargs)

    compose = naming.compose
    monkeypatch.setattr(naming, "compose", counted)
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # as in a new process: no earlier test's run
    naming._experiment_config.cache_clear()
    assert re.fullmatch(r"wide_mlp__seed4__[0-9a-f]{8}", name("experiment=wide_mlp", "seed=4"))
    assert calls == [["experiment=wide_mlp"]]
