"""`<package> status`: one row per run, read from the run folders, and a killed run shown as lost. Every command
that lists runs (status, tags, collect) sees the same runs in the same states."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import SHORT, RunTraining, start, stopped_at_the_end, wait_for

status = import_module("samebits.launch.status")
tags = import_module("samebits.analysis.tags")
folders = import_module("samebits.analysis.folders")
cli = import_module("samebits.cli")


def status_command(runs_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNS_DIR": str(runs_dir)}
    command = [sys.executable, "-m", PACKAGE, "status", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def rows(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in output.splitlines()[1:] if "/" in line.split()[0]}


def test_status_shows_finished_running_and_lost_runs(run_training: RunTraining, data_dir: Path, tmp_path: Path) -> None:
    assert run_training(tmp_path, *SHORT, "run_name=done").returncode == 0
    alive = start(tmp_path, data_dir, tmp_path / "alive-paused", "run_name=alive", "trainer.ckpt_every=10")
    killed = start(tmp_path, data_dir, tmp_path / "killed-paused", "run_name=killed")
    with stopped_at_the_end(alive, killed):
        wait_for(lambda: (tmp_path / "alive-paused").exists() and (tmp_path / "killed-paused").exists(), "pauses")
        killed.send_signal(signal.SIGKILL)  # status.json still says running: nothing could update it
        killed.wait(timeout=60)
        assert json.loads((tmp_path / "dev" / "killed" / "status.json").read_text())["state"] == "running"
        # The local job of `alive` was killed (kill -9 of its `uv run` wrapper) and its training went on alone;
        # the job of `killed` died with its training.
        gone = subprocess.Popen(["true"])  # a job's pid that no process has any more
        gone.wait()
        ended = {"backend": "local", "state": "ended", "exit_code": 137, "job_id": f"{socket.gethostname()}:{gone.pid}"}
        (tmp_path / "dev" / "alive" / "launch.json").write_text(json.dumps(ended))
        (tmp_path / "dev" / "killed" / "launch.json").write_text(json.dumps(ended | {"state": "started"}))
        shutil.copytree(tmp_path / "dev" / "done", tmp_path / "dev" / "done.replaced-20260101T000000")  # --force
        done = status_command(tmp_path)
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert table["dev/done"][1:3] == ["finished", "40/40"]
    assert re.search(r"^dev/done .* val/loss \d\.\d+ +val/acc 0\.\d+ +- +0 +\d+s ago$", done.stdout, flags=re.MULTILINE)
    assert table["dev/alive"][1:3] == ["running", "10/40"]  # its training process holds run.lock, job or not
    assert table["dev/killed"][1] == "lost"
    assert done.stdout.splitlines()[-1] == "3 runs: 1 running, 1 lost, 1 finished"


def test_a_failed_run_shows_its_reason_and_states_are_counted(tmp_path: Path) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for name, state, reason in (("a", "failed", "Diverged: loss is nan at step 7"), ("b", "paused", None)):
        run_dir = tmp_path / "sweep" / name
        run_dir.mkdir(parents=True)
        record = {"state": state, "step": 5, "updated_at": (now - timedelta(hours=3)).isoformat()}
        if name == "b":
            record["trackers_off"] = {"mlflow": "failed in publish: database is locked"}
        (run_dir / "status.json").write_text(json.dumps(record | ({"reason": reason} if reason else {})))
        (run_dir / "config.yaml").write_text("trainer:\n  max_steps: 50\n")
    (tmp_path / "sweep" / "not-a-run").mkdir()  # no status.json, no config.yaml: not listed
    lines = status.table(status.collect(tmp_path), now=now)
    assert lines[1].split() == ["sweep/a", "failed", "5/50", "-", "-", "0", "3h", "ago"]
    assert lines[-3:] == [
        "  sweep/a: Diverged: loss is nan at step 7",
        "  sweep/b: tracker mlflow switched off (failed in publish: database is locked); it catches up at the next "
        "attempt",
        "2 runs: 1 paused, 1 failed",
    ]


def test_an_unknown_tag_is_one_line_and_no_runs_is_said(tmp_path: Path) -> None:
    empty = status_command(tmp_path / "nothing-here")
    assert empty.returncode == 0 and empty.stdout.strip() == f"no runs yet in {tmp_path / 'nothing-here'}"
    (tmp_path / "dev").mkdir()
    wrong = status_command(tmp_path, "--tag", "devv")
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == f"error: no runs with main_tag 'devv' in {tmp_path}: pick one of dev"


def finished_by_hand(run_dir: Path, evaluations: list[float]) -> None:
    """A finished run's records, written directly: one evaluation line per value, in order."""
    run_dir.mkdir(parents=True)
    lines = [{"step": 10 * (i + 1), "val/loss": value} for i, value in enumerate(evaluations)]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (run_dir / "config.yaml").write_text("trainer:\n  max_steps: 20\n")
    (run_dir / "status.json").write_text(json.dumps({"state": "finished", "step": 20}))
    (run_dir / "summary.json").write_text(json.dumps({"step": 20, "params_sha256": "ab", "metrics": {}}))


def test_a_damaged_record_is_unreadable_with_a_warning_never_new(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    finished_by_hand(tmp_path / "dev" / "finished", [2.0, 1.5, 0.75])
    finished_by_hand(tmp_path / "dev" / "damaged-summary", [1.0])
    (tmp_path / "dev" / "damaged-summary" / "summary.json").write_text('{"step": 2')  # cut short
    finished_by_hand(tmp_path / "dev" / "damaged-status", [1.0])
    (tmp_path / "dev" / "damaged-status" / "status.json").write_bytes(b"\x00" * 16)
    (tmp_path / "dev" / "damaged-status" / "summary.json").unlink()
    finished_by_hand(tmp_path / "dev" / "finished-damaged-status", [1.0])
    (tmp_path / "dev" / "finished-damaged-status" / "status.json").write_text("[]")
    shutil.copytree(tmp_path / "dev" / "finished", tmp_path / "dev" / "finished.replaced-20260101T000000")

    runs = {f"{run.tag}/{run.name}": run for run in status.collect(tmp_path)}
    warnings = capsys.readouterr().err.splitlines()
    assert {name: run.state for name, run in runs.items()} == {
        "dev/damaged-status": "unreadable",
        "dev/damaged-summary": "unreadable",
        "dev/finished": "finished",
        "dev/finished-damaged-status": "finished",  # summary.json, written last, says so; the warning stays
    }
    assert runs["dev/finished"].metrics == {"val/loss": 0.75}  # the last evaluation, not the first
    damaged = ["damaged-summary/summary.json", "damaged-status/status.json", "finished-damaged-status/status.json"]
    assert len(warnings) == 3 and all(line.startswith("warning: ") for line in warnings), warnings
    assert all(any(f"dev/{name} is damaged" in line for line in warnings) for name in damaged), warnings
    lines = status.table(list(runs.values()))
    assert lines[-1] == "4 runs: 2 unreadable, 2 finished"
    assert f"  dev/damaged-status: {tmp_path}/dev/damaged-status/status.json is damaged" in "\n".join(lines)

    # tags and collect count the same runs in the same states (the copy set aside by --force is no run)
    assert tags.report(tmp_path, tmp_path)[0].split("  ")[1] == "4 runs: 2 unreadable, 2 finished"
    assert sorted(record.state for record in folders.records(tmp_path)) == [
        "finished", "finished", "unreadable", "unreadable"
    ]  # fmt: skip


def test_runs_dir_naming_a_file_is_an_error_for_every_listing_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    monkeypatch.setenv("RUNS_DIR", str(tmp_path / "a-file"))
    for command in (["status"], ["tags"], ["collect"], ["plot", "val/loss"]):
        with pytest.raises(SystemExit) as stopped:
            cli.main(PACKAGE, command)
        assert stopped.value.code == 2, command
        assert capsys.readouterr().err == (
            f"error: RUNS_DIR={tmp_path / 'a-file'} is a file, not a folder: point RUNS_DIR at the folder that holds "
            "your runs\n"
        )


def test_status_loads_neither_torch_nor_hydra(tmp_path: Path) -> None:
    """`status` is asked every few seconds while a sweep runs, and over hundreds of runs: it reads run folders and
    asks squeue, so it must start without importing torch (seconds) or Hydra."""
    probe = f"""
import sys
from samebits import cli
sys.argv = ["{PACKAGE}", "status"]
try:
    cli.main("{PACKAGE}")
except SystemExit:
    pass
heavy = sorted(name for name in ("torch", "hydra", "numpy") if name in sys.modules)
print("loaded:", heavy)
"""
    env = {**os.environ, "RUNS_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "loaded: []" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("text", "max_steps"),
    [
        (
            "model:\n  width: 8\ntrainer:\n  max_steps: 40\n  nested:\n    a: 1\n  note: |\n    two\n\n    lines\n"
            "seed: 3\n",
            40,
        ),
        ("seed: 3\ntrainer:\n  eval_every: 5\n  max_steps: 12", 12),  # the last block, no final newline
        ("trainer: {max_steps: 7}\n", 7),  # not the block style config.yaml is written in: the whole file is read
        ("model:\n  trainer:\n    max_steps: 9\n", None),
        ("trainer:\n  max_steps: [\n", None),  # damaged: no number, no error
    ],
)
def test_max_steps_from_the_trainer_block_is_what_the_whole_config_says(
    tmp_path: Path, text: str, max_steps: int | None
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    assert status._max_steps(config) == max_steps
