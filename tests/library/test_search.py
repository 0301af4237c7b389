"""`<package> search`: its search space is read and checked before any trial; the bundled space composes into
valid runs. The search itself (trials launched, a stop, a relaunch that carries on) is tested end to end by the
template's own suite (tests/test_launch.py there), on a project pushed to a bare remote."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import optuna
import pytest

from library.helpers.project import PACKAGE, ROOT

search = import_module("samebits.launch.search")
specs = import_module("samebits.launch.specs")
errors = import_module("samebits.core.errors")


def test_the_bundled_space_samples_runs_that_compose() -> None:
    space = search.read_space(ROOT / "configs" / "search" / "digits.yaml")
    distributions = {key: search.distribution(key, spec) for key, spec in space.params.items()}
    assert isinstance(distributions["optim.lr"], optuna.distributions.FloatDistribution)
    assert distributions["optim.lr"].log
    assert isinstance(distributions["optim.weight_decay"], optuna.distributions.CategoricalDistribution)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    names = set()
    for _ in range(3):
        trial = study.ask(distributions)
        (spec,) = specs.expand([*space.overrides, *search.overrides_of(trial.params)])
        assert spec.main_tag == "search-digits"
        names.add(spec.name)
    assert len(names) == 3


def test_integer_bounds_make_an_integer_parameter() -> None:
    assert isinstance(search.distribution("seed", {"low": 0, "high": 9}), optuna.distributions.IntDistribution)
    assert search.overrides_of({"optim.lr": 0.00123, "seed": 3, "optim": "sgd"}) == [
        "optim.lr=0.00123",
        "seed=3",
        "optim=sgd",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metric: val/acc\n", "needs `params:`"),
        ("params: {optim.lr: {low: 1, high: 0.1}}\nmetric: val/acc\ndirection: maximize\ntrials: 2\n",
         "params.optim.lr needs numbers low < high"),
        ("params: {optim.lr: {low: 0.1, high: 1.0}}\nmetric: val/acc\ndirection: up\ntrials: 2\n",
         "direction must be maximize or minimize, not up"),
        ("params: {seed: {low: 0, high: 3}}\nmetric: val/acc\ndirection: maximize\ntrials: 2\noverrides: [seed=1]\n",
         "seed is both a fixed override and a searched parameter"),
    ],
)  # fmt: skip
def test_a_bad_space_is_refused_in_one_line_before_any_trial(tmp_path: Path, text: str, message: str) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(text)
    env = {**os.environ, "RUNS_DIR": str(tmp_path / "runs")}
    command = [sys.executable, "-m", PACKAGE, "search", str(space)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_a_trial_whose_run_is_damaged_stops_the_search_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNS_DIR", str(tmp_path / "runs"))
    space = search.read_space(ROOT / "configs" / "search" / "digits.yaml")
    study = optuna.create_study(direction=space.direction)
    trial = study.ask({key: search.distribution(key, spec) for key, spec in space.params.items()})
    (spec,) = specs.expand([*space.overrides, *search.overrides_of(trial.params)])
    spec.run_dir.mkdir(parents=True)
    (spec.run_dir / "status.json").write_text('{"state": "runn')  # cut short: damaged from outside
    with pytest.raises(errors.UsageError, match=r"status.json is damaged .*then search again") as stopped:
        search.settle(study, space, study.trials[0], spec, "local", 1, {})
    assert str(trial.number) in str(stopped.value) and spec.label in str(stopped.value)
    assert study.trials[0].state == optuna.trial.TrialState.RUNNING  # told nothing: the next search carries on
