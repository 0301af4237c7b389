"""The config tree composes, every experiment passes the checks, and each kind of mistake is named."""

from __future__ import annotations

import importlib.util
import sys
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.compose import composed
from library.helpers.project import ROOT

config = import_module("samebits.core.config")
checks = import_module("samebits.core.checks")
errors = import_module("samebits.core.errors")
sweep = import_module("samebits.core.sweep")
import_module("samebits.core.naming")  # registers the run-name resolver

EXPERIMENTS = sorted(path.stem for path in (ROOT / "configs" / "experiment").glob("*.yaml"))


def test_default_config_is_sound() -> None:
    cfg = composed()
    assert checks.problems(cfg) == []
    assert Path(cfg.paths.run_dir) == Path(cfg.paths.runs_dir) / "dev" / cfg.run_name
    assert Path(cfg.paths.runs_dir).is_absolute()  # relative to the project, wherever a run is started from
    assert cfg.model.in_features == cfg.data.num_features


def test_the_language_model_reads_its_vocabulary_from_the_text() -> None:
    cfg = composed("experiment=char_transformer")
    assert cfg.model.vocab_size == cfg.data.vocab_size >= 100
    assert cfg.model.context_length == cfg.data.context_length
    assert cfg.objective._target_.endswith("LanguageModeling")


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_is_sound(experiment: str) -> None:
    assert checks.problems(composed(f"experiment={experiment}")) == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["optim.lr=0"], "optim.lr=0.0 must be a finite number > 0"),
        (["optim.lr=-1"], "optim.lr=-1.0 must be a finite number > 0"),
        (["optim.lr=nan"], "optim.lr=nan must be a finite number > 0"),
        (["optim.betas=[0.9]"], "optim.betas=[0.9] must be two numbers in [0, 1)"),
        (["optim=sgd", "optim.momentum=1"], "optim.momentum=1.0 must lie in [0, 1)"),
        (["model.dropout=2"], "model.dropout=2.0 must lie in [0, 1)"),
        (["+trainer.foo=1"], "trainer.foo is not a setting here"),
        (["+model.foo=1"], "model.foo is not a setting here"),
        (["run_name=../../escape"], "run_name='../../escape' is not a folder name"),
        (["data.batch_size=0"], "data.batch_size=0 must be >= 1"),
        (["data.batch_size=5000"], "data.batch_size=5000 is larger than the training set (1438 samples)"),
        (["sched.warmup_steps=700"], "sched.warmup_steps=700 must lie between 0 and trainer.max_steps=600"),
        (["data.val_fraction=1.5"], "data.val_fraction=1.5 must be between 0 and 1"),
        (["trainer.max_steps=0", "sched.warmup_steps=0"], "trainer.max_steps=0 must be >= 1"),
        (["trainer.device=tpu"], "trainer.device=tpu is not a device"),
        (["model._target_=nowhere.Model"], "model._target_=nowhere.Model cannot be imported"),
        (["main_tag=my sweep"], "main_tag='my sweep' is not a valid tag"),
        (["tags=[exploratory,a/b]"], "tags='a/b' is not a valid tag"),
        (["tags=[candidate,exploratory]"], "tags=['candidate', 'exploratory'] must hold exactly one purpose"),
        (["experiment=char_transformer", "model.width=130"], "model.width=130 must be a multiple of model.heads=4"),
        (["experiment=char_transformer", "data.batch_size=99999"], "data.batch_size=99999 is larger than the "),
        (["experiment=char_transformer", "data.context_length=0"], "data.context_length=0 must be >= 1"),
        (["data.noise_std=-1"], "data.noise_std=-1.0 must be finite and >= 0"),
        (["trainer.precision=16"], "trainer.precision=16 is not a precision: pass 32, bf16 or fp16"),
        (["trainer.precision=fp16"], "trainer.precision=fp16 needs a CUDA device"),
        (["trainer.accumulate_grad_batches=0"], "trainer.accumulate_grad_batches=0 must be >= 1"),
        (["experiment=char_transformer", "data.test_every=1"], "data.test_every=1 must be 0 (no test split) or >= 2"),
        (["data.test_fraction=0.9"], "data.test_fraction=0.9 must be >= 0 and leave training samples"),
    ],
)
def test_each_mistake_is_named_in_one_line(overrides: list[str], expected: str) -> None:
    found = checks.problems(composed(*overrides))
    assert len(found) == 1, found
    assert found[0].startswith(expected)
    assert "\n" not in found[0]


def test_identity_ignores_infrastructure_but_not_hyperparameters() -> None:
    base = config.identity(composed())
    assert config.identity(composed("trainer.num_workers=3", "main_tag=other", "paths.runs_dir=/elsewhere")) == base
    assert config.identity(composed("optim.lr=1e-3")) != base
    assert config.identity(composed("seed=1")) != base
    assert "paths" not in base and "num_workers" not in base["trainer"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "optim.lr=fast",
            "error: Error merging override optim.lr=fast Value 'fast' of type 'str' could not be",
        ),
        (
            "model=nonexistent",
            "error: In 'train': Could not find 'model/nonexistent' Available options in 'model':",
        ),
        ("optim.lrr=1", "error: Could not override 'optim.lrr'. Key 'lrr' not in 'AdamWConfig' (hint)"),
    ],
)
def test_composition_errors_are_condensed_to_one_line(
    override: str, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as stopped, errors.exit_on_error(), errors.one_line_config_errors(hint="hint"):
        composed(override)
    assert stopped.value.code == errors.USAGE_ERROR
    reported = capsys.readouterr().err
    assert reported.startswith(message)
    assert len(reported.splitlines()) == 1


def test_trackers_compose_as_a_list_with_jsonl_always_on(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = "logger.mlflow is set but MLflow is not installed: run `uv sync --extra mlflow`"
    everything = composed("logger=[jsonl,wandb,mlflow]")
    assert checks.problems(everything) == ([] if importlib.util.find_spec("mlflow") else [missing])
    assert everything.logger.mlflow.tracking_uri == f"sqlite:///{everything.paths.runs_dir}/mlflow.db"
    assert everything.logger.mlflow.experiment == everything.main_tag
    assert composed("logger=[wandb]").logger.jsonl.filename == "metrics.jsonl"  # JSONL whatever the list says
    assert composed().logger.wandb is None and composed().logger.mlflow is None
    assert checks.problems(composed("logger=[wandb]", "logger.wandb.mode=cloud")) == [
        "logger.wandb.mode=cloud is not a mode: pass auto, online or offline"
    ]
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as without the extra: nothing to import
    assert checks.problems(composed("logger=[jsonl,mlflow]")) == [missing]
