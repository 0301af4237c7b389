"""An experiment's own config is kept across runs, under a key over everything its composition reads."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig

from library.helpers.compose import composed
from library.helpers.project import PACKAGE, ROOT

experiment_config = import_module("samebits.core.experiment_config")
naming = import_module("samebits.core.naming")
config = import_module("samebits.core.config")


@pytest.fixture
def counted_compositions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[list[str]]]:
    """The experiment compositions naming makes, with a cache of its own, as in a new process each time."""
    calls: list[list[str]] = []
    compose_train = naming.compose_train

    def counted(overrides: list[str]) -> object:
        calls.append(list(overrides))
        return compose_train(overrides)

    monkeypatch.setattr(naming, "compose_train", counted)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)  # no earlier test's run
    naming._experiment_config.cache_clear()
    yield calls
    naming._experiment_config.cache_clear()


def test_a_second_run_names_itself_without_composing_its_experiment(counted_compositions: list[list[str]]) -> None:
    first = composed("experiment=wide_mlp", "seed=4", "optim.lr=0.002")
    assert counted_compositions == [["experiment=wide_mlp"]]
    assert len(list(Path(os.environ["XDG_CACHE_HOME"], PACKAGE, "configs").glob("*.json"))) == 1
    naming._experiment_config.cache_clear()  # a new process
    second = composed("experiment=wide_mlp", "seed=4", "optim.lr=0.002")
    assert counted_compositions == [["experiment=wide_mlp"]]
    assert second.run_name == first.run_name
    assert re.fullmatch(r"wide_mlp__lr0.002_seed4__[0-9a-f]{8}", second.run_name)
    assert config.identity(second) == config.identity(first)


def test_an_unreadable_entry_is_composed_again_and_replaced(
    counted_compositions: list[list[str]], tmp_path: Path
) -> None:
    first = composed("seed=3").run_name
    (entry,) = (tmp_path / "cache" / PACKAGE / "configs").glob("*.json")
    entry.write_text('{"format": 1, "config": ')  # cut short
    naming._experiment_config.cache_clear()
    assert composed("seed=3").run_name == first
    assert counted_compositions == [[], []]
    assert entry.read_text().endswith("}\n")


def test_a_cache_that_cannot_be_written_only_costs_the_composition(
    counted_compositions: list[list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    name = composed("seed=3").run_name
    naming._experiment_config.cache_clear()
    assert composed("seed=3").run_name == name
    assert counted_compositions == [[], []]


def test_the_key_changes_with_every_config_file_and_schema_but_not_with_the_projects_place(tmp_path: Path) -> None:
    configs = shutil.copytree(ROOT / "configs", tmp_path / "configs")
    sources = [("pkg", "hydra.conf"), ("file", str(configs)), ("structured", "")]
    before = experiment_config.key("wide_mlp", sources)
    assert experiment_config.key("wide_mlp", sources) == before
    moved = shutil.copytree(configs, tmp_path / "elsewhere" / "configs")
    assert (
        experiment_config.key("wide_mlp", [("pkg", "hydra.conf"), ("file", str(moved)), ("structured", "")]) == before
    )
    assert experiment_config.key(None, sources) != before
    assert experiment_config.key("char_transformer", sources) != before

    optim = configs / "optim" / "adamw.yaml"
    text = optim.read_text()
    optim.write_text(text.replace("lr:", "lr: 0.5\nunused_lr:", 1))
    assert experiment_config.key("wide_mlp", sources) != before
    optim.write_text(text)
    (configs / "model" / "new.yaml").write_text("hidden_sizes: [1]\n")
    assert experiment_config.key("wide_mlp", sources) != before
    (configs / "model" / "new.yaml").unlink()
    (configs / "model" / "notes.txt").write_text("not a config")
    assert experiment_config.key("wide_mlp", sources) == before

    store = ConfigStore.instance()
    store.store(group="probe_only", name="extra", node=_Extra)
    try:
        with_a_schema = experiment_config.key("wide_mlp", sources)
        assert with_a_schema != before
        store.store(group="probe_only", name="extra", node=_ExtraAsFloat)  # the same default, another type
        assert experiment_config.key("wide_mlp", sources) not in (before, with_a_schema)
    finally:
        del store.repo["probe_only"]
    assert experiment_config.key("wide_mlp", sources) == before
    assert experiment_config.key("wide_mlp", [("unknown", "x")]) is None


@dataclass
class _Extra:
    size: int = 1


@dataclass
class _ExtraAsFloat:
    size: float = 1
