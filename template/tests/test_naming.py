"""Run names: one config gives one name, and different configs give different names."""

from __future__ import annotations

from test_config import composed


def name(*overrides: str) -> str:
    return composed(*overrides).run_name


def test_same_config_same_name_whatever_the_spelling() -> None:
    assert name("optim.lr=1e-3", "seed=1") == name("seed=1", "optim.lr=0.001")


def test_name_reads_the_experiment_and_changed_settings() -> None:
    assert name().startswith("base__")
    assert name("experiment=wide_mlp", "optim.lr=3e-4").startswith("wide_mlp__lr0.0003__")


def test_infrastructure_does_not_rename_a_run() -> None:
    assert name("trainer.num_workers=2", "trainer.progress_bar=false") == name()


def test_a_sweep_gets_distinct_names() -> None:
    names = {name(f"optim.lr={lr}", f"seed={seed}") for lr in (1e-3, 3e-3, 1e-2, 3e-2) for seed in range(5)}
    assert len(names) == 20
