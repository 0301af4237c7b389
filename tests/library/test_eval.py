"""`<package> eval`: a run's checkpoint evaluated again from its saved config, and the best checkpoint that
training keeps for it. Run as users run it, in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import RunTraining

best = import_module("samebits.core.best")

# The best checkpoint by the *highest* validation loss: the first evaluation's, since the loss falls, so the best
# is an old checkpoint that keep_last=1 would otherwise prune.
WORST_IS_BEST = ["trainer.best_metric=val/loss", "trainer.best_mode=max", "trainer.keep_last=1"]
SHORT = ["trainer.max_steps=40", "sched.warmup_steps=5", "trainer.eval_every=10", "trainer.ckpt_every=20"]


@pytest.fixture(scope="module")
def run_dir(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    done = run_training(runs, *SHORT, *WORST_IS_BEST, "data.test_fraction=0.1")
    assert done.returncode == 0, done.stderr
    (found,) = (runs / "dev").iterdir()
    return found


def evaluate(run_dir: Path, *options: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", PACKAGE, "eval", str(run_dir), *options]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=600)
    assert done.returncode == expect, done.stderr
    return done


def recorded(run_dir: Path) -> dict:
    return json.loads((run_dir / "eval.json").read_text())


def test_the_latest_checkpoint_gives_the_final_evaluation_every_time(run_dir: Path) -> None:
    final = json.loads((run_dir / "summary.json").read_text())
    evaluate(run_dir)
    first = recorded(run_dir)["val:latest"]
    evaluate(run_dir, "--split", "val", "--checkpoint", "latest")
    again = recorded(run_dir)["val:latest"]
    assert first["metrics"] == again["metrics"] == final["metrics"]  # equal floats, not close ones
    assert first["step"] == 40 and first["params_sha256"] == final["params_sha256"]


def test_the_best_checkpoint_is_kept_past_keep_last_and_evaluates_as_it_did(run_dir: Path) -> None:
    record = json.loads((run_dir / "checkpoints" / "best.json").read_text())
    assert record | {"value": 0} == {"checkpoint": "step_000010.pt", "step": 10, "metric": "val/loss",
                                     "mode": "max", "value": 0}  # fmt: skip
    assert sorted(path.name for path in (run_dir / "checkpoints").glob("*.pt")) == ["step_000010.pt", "step_000040.pt"]
    shown = evaluate(run_dir, "--checkpoint", "best").stdout
    assert "step_000010.pt (step 10), val: val/loss=" in shown
    logged = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert logged["step"] == 10
    assert recorded(run_dir)["val:best"]["metrics"] == {key: logged[key] for key in ("val/loss", "val/acc")}


def test_the_test_split_is_held_out_and_named_as_such(run_dir: Path) -> None:
    evaluate(run_dir, "--split", "test")
    metrics = recorded(run_dir)["test:latest"]["metrics"]
    assert set(metrics) == {"test/loss", "test/acc"} and 0.5 < metrics["test/acc"] <= 1


def test_mistakes_get_one_line(run_training: RunTraining, run_dir: Path, tmp_path: Path) -> None:
    done = evaluate(tmp_path, expect=2)
    assert (
        done.stderr == f"error: {tmp_path} has no config.yaml: pass the folder of a run (runs/<main_tag>/<run_name>)\n"
    )
    plain = run_training(tmp_path, "trainer.max_steps=10", "sched.warmup_steps=2")
    assert plain.returncode == 0, plain.stderr
    (plain_run,) = (tmp_path / "dev").iterdir()
    done = evaluate(plain_run, "--split", "test", expect=2)
    assert done.stderr.startswith(f"error: {plain_run}'s data has no test split") and done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("metric", "mode"),
    [("val/loss", "min"), ("val/bpc", "min"), ("val/top1_err", "min"), ("val/acc", "max"), ("val/f1", "max")],
)
def test_auto_mode_lowers_loss_like_metrics(metric: str, mode: str) -> None:
    assert best.resolve_mode(metric, "auto") == mode
    assert best.resolve_mode(metric, "max") == "max"
