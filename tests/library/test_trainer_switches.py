"""The trainer's switches (README: "Trainer switches"), each run as users run it: precision, gradient
accumulation, torch.compile and the `<package> train` console command. Exactness under resume is proved
in-process by test_resume_exact.py and, with torchrun and kill -9, by the reproducibility proof (the template's
slow tests run it with bf16 and accumulation)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest
import torch

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import RunTraining

compiling = import_module("samebits.core.compiling")

SHORT = ["trainer.max_steps=20", "sched.warmup_steps=5", "trainer.eval_every=10", "trainer.ckpt_every=10"]


def only_run(runs_dir: Path) -> Path:
    (run_dir,) = (runs_dir / "dev").iterdir()
    return run_dir


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture(scope="module")
def float32_run(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The short run at the default precision, which the switched runs are compared with."""
    runs_dir = tmp_path_factory.mktemp("float32")
    done = run_training(runs_dir, *SHORT)
    assert done.returncode == 0, done.stderr
    return only_run(runs_dir)


def test_bf16_trains_on_cpu_under_its_own_name(run_training: RunTraining, tmp_path: Path, float32_run: Path) -> None:
    done = run_training(tmp_path, *SHORT, "trainer.precision=bf16")
    assert done.returncode == 0, done.stderr
    run_dir = only_run(tmp_path)
    assert "_precisionbf16__" in run_dir.name
    assert summary(run_dir)["metrics"]["val/loss"] < 2.3  # below a uniform guess over the 10 digits (ln 10)
    # Computed in bfloat16, the run ends with other weights than in float32: autocast was on (test_mixed_precision)
    assert summary(run_dir)["params_sha256"] != summary(float32_run)["params_sha256"]
    saved = torch.load(run_dir / "checkpoints" / "step_000020.pt", weights_only=True)
    assert saved["scaler"] == {}  # bf16 needs no gradient scaling; fp16's scale would be saved here


def test_fp16_on_cpu_is_refused_in_one_line(run_training: RunTraining, tmp_path: Path) -> None:
    done = run_training(tmp_path, *SHORT, "trainer.precision=fp16")
    assert done.returncode == 2
    assert done.stderr.startswith("error: trainer.precision=fp16 needs a CUDA device"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_accumulation_takes_a_window_of_batches_per_step(run_training: RunTraining, tmp_path: Path) -> None:
    done = run_training(tmp_path, *SHORT, "trainer.accumulate_grad_batches=3")
    assert done.returncode == 0, done.stderr
    run_dir = only_run(tmp_path)
    assert "accumulate_grad_batches3" in run_dir.name
    saved = torch.load(run_dir / "checkpoints" / "step_000010.pt", weights_only=True)
    assert saved["data"] == {"epoch": 1, "batch": 8}  # 10 steps x 3 micro-batches, 22 batches per epoch
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [10, 20]


@pytest.mark.slow
def test_a_compiled_run_repeats_itself(run_training: RunTraining, tmp_path: Path) -> None:
    """Compiling trains where this machine can, and says in one line why not where it cannot; twice, the same
    config gives the same weights."""
    runs = [run_training(tmp_path / name, *SHORT, "trainer.compile=true") for name in ("first", "second")]
    for done in runs:
        assert done.returncode == 0, done.stderr
    log = (only_run(tmp_path / "first") / "train.log").read_text()
    reason = compiling.why_not(torch.device("cpu"))
    expected = "compiling the model with torch.compile" if reason is None else f"{reason}: training without compiling"
    assert expected in log
    first, second = (summary(only_run(tmp_path / name)) for name in ("first", "second"))
    assert first["params_sha256"] == second["params_sha256"]
    assert "_compiletrue_" in only_run(tmp_path / "first").name


def test_console_train_is_the_module_entry_point(data_dir: Path, tmp_path: Path, float32_run: Path) -> None:
    env = {**os.environ, "DATA_DIR": str(data_dir), "RUNS_DIR": str(tmp_path / "console")}
    command = [sys.executable, "-m", PACKAGE, "train", "trainer.progress_bar=false", *SHORT]
    by_console = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert by_console.returncode == 0, by_console.stderr
    module_run, console_run = float32_run, only_run(tmp_path / "console")
    assert console_run.name == module_run.name
    assert summary(console_run)["params_sha256"] == summary(module_run)["params_sha256"]
    shown = subprocess.run([*command[:4], "--cfg", "job"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "precision: '32'" in shown.stdout and "accumulate_grad_batches: 1" in shown.stdout
