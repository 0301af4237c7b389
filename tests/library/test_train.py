"""The training loop, run as users run it: a fresh process per run, checked through the files it leaves."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import samebits
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from library.helpers.project import ENVIRONMENT, PACKAGE, ROOT
from library.helpers.runs import RunTraining

FAKE_KEY = "0123456789abcdef-not-a-real-key"


@pytest.fixture(scope="module")
def default_run(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default experiment, with its full step budget, exactly as `python -m <package>.train` runs it."""
    runs_dir = tmp_path_factory.mktemp("runs")
    done = run_training(runs_dir, env={"WANDB_API_KEY": FAKE_KEY})
    assert done.returncode == 0, done.stderr
    (run_dir,) = (runs_dir / "dev").iterdir()
    return run_dir


def test_default_experiment_learns_the_digits(default_run: Path) -> None:
    summary = json.loads((default_run / "summary.json").read_text())
    assert summary["metrics"]["val/acc"] >= 0.90
    assert summary["step"] == 600
    assert re.fullmatch(r"[0-9a-f]{64}", summary["params_sha256"])
    assert re.fullmatch(r"[0-9a-f]{64}", summary["rng_sha256"])


def test_the_same_loop_trains_a_language_model(lm_run: Path) -> None:
    lines = [json.loads(line) for line in (lm_run / "metrics.jsonl").read_text().splitlines()]
    evaluations = [line for line in lines if "val/bpc" in line]
    assert [line["step"] for line in evaluations] == [10, 20]
    assert all({"val/loss", "val/bpc"} <= set(line) and "val/acc" not in line for line in evaluations)
    summary = json.loads((lm_run / "summary.json").read_text())
    assert set(summary["metrics"]) == {"val/loss", "val/bpc"} and summary["step"] == 20
    assert summary["metrics"]["val/bpc"] < 7  # below a uniform guess over the text's ~103 symbols (6.7 bits)
    assert lm_run.name.startswith("char_transformer__")


def test_every_run_file_gets_the_mode_its_metrics_get(lm_run: Path) -> None:
    """Teammates who can read `metrics.jsonl` (a plain open) can read the config, status and checkpoints too."""
    modes = {path.relative_to(lm_run).as_posix(): stat.S_IMODE(path.stat().st_mode) for path in lm_run.rglob("*")}
    plain = modes["metrics.jsonl"]
    assert {"config.yaml", "status.json", "provenance.json", "checkpoints/step_000020.pt"} <= set(modes)
    assert {name: mode for name, mode in modes.items() if not (lm_run / name).is_dir() and mode != plain} == {}


def test_run_folder_holds_the_resolved_config_and_one_line_per_logged_step(default_run: Path) -> None:
    assert re.fullmatch(r"base__[0-9a-f]{8}", default_run.name)
    saved = OmegaConf.load(default_run / "config.yaml")
    assert saved["run_name"] == default_run.name
    assert saved["optim"]["lr"] == 3e-3
    lines = [json.loads(line) for line in (default_run / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == list(range(10, 601, 10))
    assert all("train/loss" in line for line in lines)
    assert [line["step"] for line in lines if "val/acc" in line] == list(range(100, 601, 100))


def test_the_logged_learning_rate_follows_the_schedule_step_by_step(default_run: Path) -> None:
    """After step s the optimizer has taken s steps, and the schedule s steps too: the lr logged at s is the
    schedule's, built alone from the saved config and stepped s times."""
    saved = OmegaConf.load(default_run / "config.yaml")
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=saved.optim.lr)
    schedule = instantiate(saved.sched, _convert_="all")(optimizer)
    expected = {}
    for step in range(1, saved.trainer.max_steps + 1):
        optimizer.step()
        schedule.step()
        expected[step] = schedule.get_last_lr()[0]
    logged = {
        line["step"]: line["lr"] for line in map(json.loads, (default_run / "metrics.jsonl").read_text().splitlines())
    }
    assert logged == pytest.approx({step: expected[step] for step in logged}, rel=1e-12)
    assert len(set(logged.values())) > 1  # a schedule that moves, so that a rate stuck at its start shows above


def test_provenance_records_the_code_and_never_a_secret(default_run: Path) -> None:
    text = (default_run / "provenance.json").read_text()
    assert FAKE_KEY not in text
    recorded = json.loads(text)
    assert recorded["environment"]["WANDB_API_KEY"] == "<redacted>"
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    assert recorded["git"]["commit"] == head
    assert recorded["run"]["name"] == default_run.name
    assert recorded["run"]["tags"] == ["exploratory"] and recorded["run"]["main_tag"] == "dev"
    assert len(recorded["uv_lock_sha256"]) == 64 and recorded["software"]["num_threads"] == 1
    library = Path(samebits.__file__).resolve().parents[2]  # the checkout the library is imported from
    library_head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=library)
    assert recorded["library"]["name"] == "samebits" and recorded["library"]["version"] == samebits.__version__
    assert recorded["library"]["commit"] == library_head.stdout.strip() and recorded["library"]["dirty"] in (
        True,
        False,
    )


def test_running_a_finished_config_again_changes_nothing(run_training: RunTraining, default_run: Path) -> None:
    before = {path.name: path.read_bytes() for path in default_run.rglob("*") if path.is_file()}
    done = run_training(default_run.parents[1])
    assert done.returncode == 0, done.stderr
    assert "has finished already" in done.stdout
    after = {path.name: path.read_bytes() for path in default_run.rglob("*") if path.is_file()}
    assert after["train.log"].startswith(before.pop("train.log"))  # the log only gains the "nothing to do" line
    assert after.pop("run.lock") != before.pop("run.lock")  # it names its latest holder
    assert {name: content for name, content in after.items() if name != "train.log"} == before


def test_a_stopped_run_refuses_to_resume_under_another_config(run_training: RunTraining, tmp_path: Path) -> None:
    fixed = ["run_name=fixed", "trainer.max_steps=60", "sched.warmup_steps=5"]
    stopped = run_training(tmp_path, *fixed, "trainer.stop_at_step=30")
    assert stopped.returncode == 75, stopped.stderr
    run_dir = tmp_path / "dev" / "fixed"
    assert json.loads((run_dir / "status.json").read_text()).items() >= {"state": "paused", "step": 30}.items()
    checkpoints_before = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    changed = run_training(tmp_path, *fixed, "optim.lr=1e-3")
    assert changed.returncode == 2
    assert changed.stderr.startswith("error: run fixed was started with other settings (optim.lr: 0.003 -> 0.001)")
    assert len(changed.stderr.strip().splitlines()) == 1, changed.stderr
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == checkpoints_before


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("optim.lr=-1", "error: optim.lr=-1.0 must be a finite number > 0"),
        ("optim.lrr=1e-3", "error: Could not override 'optim.lrr'. Key 'lrr' not in 'AdamWConfig'"),
    ],
)
def test_a_bad_override_fails_in_one_line_and_leaves_no_run_folder(
    run_training: RunTraining, tmp_path: Path, override: str, message: str
) -> None:
    done = run_training(tmp_path, override)
    assert done.returncode == 2
    assert done.stderr.startswith(message)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_console_command_shows_help_and_version() -> None:
    shown = subprocess.run([sys.executable, "-m", PACKAGE, "--help"], capture_output=True, text=True, check=True)
    assert f"python -m {PACKAGE}.train" in shown.stdout
    version = subprocess.run([sys.executable, "-m", PACKAGE, "--version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(rf"{PACKAGE} \(not installed\) \(samebits \d+\.\d+\.\d+\)", version.stdout.strip())


COUNTING_COMPOSITIONS = """
import atexit, runpy, sys
from hydra._internal.hydra import Hydra

composed = []
compose_config = Hydra.compose_config
Hydra.compose_config = lambda self, *args, **kwargs: composed.append(1) or compose_config(self, *args, **kwargs)
atexit.register(lambda: print("compositions:", len(composed)))
runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
"""


def test_a_run_composes_its_config_once(data_dir: Path, tmp_path: Path) -> None:
    """Hydra composes the config once to read `hydra.mode` and again to run it; the entry point spares a run the
    first. The experiment's own config, which the run's name is compared with, is composed by the first run on
    these configs and kept (core/experiment_config.py), so the next run composes its own config only."""
    env = {**os.environ, **ENVIRONMENT, "DATA_DIR": str(data_dir), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    short = ["trainer.max_steps=1", "sched.warmup_steps=0", "trainer.progress_bar=false"]
    for run, compositions in (("first", 2), ("second", 1)):
        command = [sys.executable, "-c", COUNTING_COMPOSITIONS, f"{PACKAGE}.train", *short, f"main_tag={run}"]
        env["RUNS_DIR"] = str(tmp_path / run)
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"compositions: {compositions}" in done.stdout, (run, done.stdout[-500:])
