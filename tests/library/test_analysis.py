"""`<package> collect`, `plot` and `tags`, on a real sweep: 2 learning rates x 2 widths x 2 seeds, trained
by four processes at once with every tracker on, then read back as a table (from the run folders, from MLflow
alone and from wandb's files alone), a plot and the main tags' notes."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pandas as pd
import pytest

from library.helpers.project import PACKAGE, ROOT

folders = import_module("samebits.analysis.folders")
plots = import_module("samebits.analysis.plots")
records = import_module("samebits.analysis.records")
table = import_module("samebits.analysis.table")
tags = import_module("samebits.analysis.tags")
exit_on_error = import_module("samebits.core.errors").exit_on_error

TAG = "analysis_test"
TINY = [
    "trainer.max_steps=20",
    "sched.warmup_steps=5",
    "trainer.eval_every=10",
    "trainer.log_every=5",
    "trainer.ckpt_every=10",
    "trainer.progress_bar=false",
    f"main_tag={TAG}",
]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs folder of the sweep's 8 finished runs, logged to every tracker, plus what is not a run: a `.launch`
    folder and a run folder set aside by `launch --force`. Four processes train at once, one per (lr, width), each
    its two seeds in turn: four runs share the new MLflow store at any time."""
    runs_dir = tmp_path_factory.mktemp("analysis-runs")
    env = {**os.environ, "RUNS_DIR": str(runs_dir), "DATA_DIR": str(data_dir)}
    started = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                f"{PACKAGE}.train",
                "-m",
                lr,
                width,
                "seed=0,1",
                "logger=[jsonl,wandb,mlflow]",
                *TINY,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for lr in ("optim.lr=1e-3", "optim.lr=3e-3")
        for width in ("model.hidden_sizes=[16]", "model.hidden_sizes=[32]")
    ]
    for process in started:
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr
    (runs_dir / ".launch").mkdir()
    first = sorted(path for path in (runs_dir / TAG).iterdir() if path.is_dir())[0]
    aside = runs_dir / TAG / f"{first.name}.replaced-20260101T000000"
    aside.mkdir()
    for name in ("config.yaml", "status.json", "metrics.jsonl"):
        shutil.copy(first / name, aside / name)
    return runs_dir


def command(runs_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNS_DIR": str(runs_dir)}
    return subprocess.run(
        [sys.executable, "-m", PACKAGE, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_table_has_one_row_per_run_its_swept_settings_and_final_metrics(runs: Path) -> None:
    found = table.collect(runs, TAG)
    assert len(found) == 8  # neither .launch nor the folder set aside is a run
    columns = list(found.columns)
    assert columns[: len(table.RUN_COLUMNS)] == list(table.RUN_COLUMNS)
    assert columns[len(table.RUN_COLUMNS) : columns.index("step")] == ["model.hidden_sizes", "optim.lr", "seed"]
    assert {"val/loss", "val/acc", "train/loss", "lr"} <= set(columns)
    assert set(zip(found["model.hidden_sizes"], found["optim.lr"], found["seed"], strict=True)) == {
        (width, lr, seed) for width in ("[16]", "[32]") for lr in (1e-3, 3e-3) for seed in (0, 1)
    }
    assert set(found["state"]) == {"finished"} and set(found["step"]) == {20} and set(found["tags"]) == {"exploratory"}
    for run in found.itertuples(index=False):
        summary = json.loads((runs / TAG / run.run_name / "summary.json").read_text())
        assert run.config_sha256[:8] == run.run_name[-8:]  # the name ends with the config hash
        assert found.loc[found["run_name"] == run.run_name, "val/loss"].item() == summary["metrics"]["val/loss"]
        assert math.isfinite(found.loc[found["run_name"] == run.run_name, "train/loss"].item())


def test_the_table_is_written_as_csv_and_parquet_and_reads_back_equal(runs: Path, tmp_path: Path) -> None:
    expected = table.collect(runs, TAG)
    done = command(runs, "collect", "--tag", TAG, "--out", str(tmp_path / "runs.csv"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote 8 runs to {tmp_path / 'runs.csv'}"
    table.write(expected, tmp_path / "runs.parquet")  # the command's own writer, without a second process
    hashes = {"commit": str, "config_sha256": str}  # a hash of digits and one `e` would read as a number
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "runs.csv", dtype=hashes), expected)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "runs.parquet"), expected)


def test_a_bad_out_suffix_an_unknown_metric_or_setting_are_one_line_errors(runs: Path, tmp_path: Path) -> None:
    suffix = command(runs, "collect", "--out", str(tmp_path / "runs.xlsx"))
    metric = command(runs, "plot", "val/lss", "--tag", TAG)
    setting = command(runs, "plot", "val/loss", "--tag", TAG, "--by", "optim.lrr")
    for done in (suffix, metric, setting):
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: "), done.stderr
    assert ".csv or .parquet, not .xlsx" in suffix.stderr
    assert "'val/lss'" in metric.stderr and "lr, train/loss, val/acc, val/loss" in metric.stderr
    assert "model.hidden_sizes, optim.lr, seed" in setting.stderr
    assert list(tmp_path.iterdir()) == [] and not list(runs.glob("*.png"))


def test_the_plot_averages_seeds_and_colours_lines_by_the_chosen_setting(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "val_loss.png"
    figure = plots.plot(runs, "val/loss", TAG, "optim.lr", out)
    (axes,) = figure.axes
    assert axes.get_xlabel() == "step (optimizer updates)"
    assert axes.get_ylabel() == "val/loss (nats)"
    assert TAG in axes.get_title() and "val/loss" in axes.get_title()
    legend = axes.get_legend()
    assert "optim.lr" in legend.get_title().get_text()
    labels = [text.get_text() for text in legend.get_texts()]
    assert len(labels) == 4 and all("mean, min–max over 2 seeds" in label for label in labels), labels
    lines = axes.get_lines()
    assert sorted(line.get_label() for line in lines) == sorted(labels)
    assert len(axes.collections) == 4  # one min–max band per line
    colour_by_lr: dict[str, set[tuple[float, ...]]] = {}
    for line in lines:
        lr = re.search(r"optim\.lr=([\d.e-]+)", line.get_label())
        assert lr is not None
        colour_by_lr.setdefault(lr.group(1), set()).add(tuple(line.get_color()))
    assert sorted(colour_by_lr) == ["0.001", "0.003"]
    assert all(len(colours) == 1 for colours in colour_by_lr.values())  # one colour per learning rate
    assert colour_by_lr["0.001"] != colour_by_lr["0.003"]
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_plot_writes_next_to_the_runs_by_default_and_prints_the_path(runs: Path) -> None:
    done = command(runs, "plot", "val/acc", "--tag", TAG)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(runs / f"{TAG}-val_acc.png")
    assert (runs / f"{TAG}-val_acc.png").read_bytes()[:8] == PNG_MAGIC


def test_tags_lists_run_counts_and_notes_and_points_at_a_missing_note(runs: Path) -> None:
    done = command(runs, "tags")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert re.fullmatch(rf"{TAG} +8 runs: 8 finished +\(no note: add one to configs/tags.yaml\)", lines[TAG])
    assert re.fullmatch(r"dev +no runs +quick checks of the default experiment", lines["dev"])
    warning = tags.missing_note(ROOT, TAG)
    assert warning is not None and TAG in warning and "configs/tags.yaml" in warning
    assert tags.missing_note(ROOT, "dev") is None


def test_a_malformed_tags_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "configs").mkdir()
    for text in ("dev: [unclosed\n", "- a list\n- of tags\n"):
        (tmp_path / "configs" / "tags.yaml").write_text(text)
        with pytest.raises(SystemExit) as exit_info, exit_on_error():
            tags.notes(tmp_path)
        assert exit_info.value.code == 2
        assert len(capsys.readouterr().err.splitlines()) == 1


def test_swept_columns_and_rows_work_from_plain_values_as_a_tracking_server_gives_them() -> None:
    """What an MLflow or W&B source hands over: flattened settings as text, final metrics, no run folder."""
    settings = {
        "a": {"optim.lr": "0.001", "model.depth": "2", "seed": "0"},
        "b": {"optim.lr": "0.003", "model.depth": "2", "seed": "1", "sched.warmup_steps": "5"},
    }
    assert records.swept_columns(settings) == ["optim.lr", "sched.warmup_steps", "seed"]
    runs = [
        records.RunRecord(name, "sweep", ("candidate",), "finished", "abc", "123", found, {"val/loss": 1.0}, 20)
        for name, found in settings.items()
    ]
    found = table.frame(runs)
    assert list(found.columns) == [*table.RUN_COLUMNS, "optim.lr", "sched.warmup_steps", "seed", "step", "val/loss"]
    assert pd.isna(found["sched.warmup_steps"][0]) and found["sched.warmup_steps"][1] == "5"  # not in run a


def test_mlflow_and_wandb_hold_every_run_whole_and_mlflow_alone_gives_the_same_table(runs: Path) -> None:
    from_folders = table.collect(runs, TAG)
    from_mlflow = table.frame(import_module("samebits.analysis.from_mlflow").records(f"sqlite:///{runs}/mlflow.db"))
    key = ["run_name"]
    pd.testing.assert_frame_equal(
        from_mlflow.sort_values(key).reset_index(drop=True), from_folders.sort_values(key).reset_index(drop=True)
    )
    wandb_files = import_module("samebits.tracking.wandb_files")
    for run_dir in folders.run_dirs(runs, TAG):
        logged = [
            {k: v for k, v in line.items() if k != "step"} | {"global_step": line["step"]}
            for line in folders.lines(run_dir)
        ]
        wandb_id = json.loads((run_dir / "trackers.json").read_text())["wandb"]
        assert wandb_files.history(run_dir / "wandb", wandb_id) == logged  # each step once, every value equal


def test_collect_from_mlflow_works_without_the_run_folders(runs: Path, tmp_path: Path) -> None:
    store = tmp_path / "mlflow.db"
    shutil.copy(runs / "mlflow.db", store)  # the folders are not there: only the store
    done = command(tmp_path / "elsewhere", "collect", "--from", "mlflow", "--mlflow-uri", f"sqlite:///{store}")
    assert done.returncode == 0, done.stderr
    assert sum("base__" in line for line in done.stdout.splitlines()) == 8


def test_collect_from_wandb_files_alone_gives_the_same_table(runs: Path, tmp_path: Path) -> None:
    copied = tmp_path / "wandb-copy"  # the runs' wandb folders kept, the run folders gone
    for run_dir in folders.run_dirs(runs, TAG):
        shutil.copytree(run_dir / "wandb", copied / run_dir.name / "wandb")
    from_folders = table.collect(runs, TAG)
    from_wandb = table.frame(import_module("samebits.analysis.from_wandb").from_files(copied, TAG))
    key = ["run_name"]
    pd.testing.assert_frame_equal(
        from_wandb.sort_values(key).reset_index(drop=True), from_folders.sort_values(key).reset_index(drop=True)
    )
    done = command(tmp_path / "elsewhere", "collect", "--from", "wandb", "--wandb-dir", str(copied))
    assert done.returncode == 0, done.stderr
    assert sum("base__" in line for line in done.stdout.splitlines()) == 8


def test_collect_from_a_wandb_server_it_cannot_use_is_one_line(tmp_path: Path, unused_port: int) -> None:
    """No key (and no ~/.netrc), then a key for a host that is down: one line each, pointing at --wandb-dir."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("WANDB_")}
    down = {"WANDB_API_KEY": "0" * 40, "WANDB_BASE_URL": f"http://127.0.0.1:{unused_port}"}
    for extra in ({}, down):
        env = {**clean, **extra, "HOME": str(tmp_path), "RUNS_DIR": str(tmp_path / "runs")}
        done = subprocess.run(
            [sys.executable, "-m", PACKAGE, "collect", "--from", "wandb"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and done.stdout == "", done
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error: W&B server: "), done.stderr
        assert "--wandb-dir" in done.stderr
