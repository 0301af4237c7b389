"""`<package> status`: one row per run, read from the run folders, and a killed run shown as lost."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from importlib import import_module
from pathlib import Path

from conftest import PACKAGE, ROOT, RunTraining
from test_one_writer import SHORT, start, wait_for

status = import_module(f"{PACKAGE}.launch.status")


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
    try:
        wait_for(lambda: (tmp_path / "alive-paused").exists() and (tmp_path / "killed-paused").exists(), "pauses")
        killed.send_signal(signal.SIGKILL)  # status.json still says running: nothing could update it
        killed.wait(timeout=60)
        assert json.loads((tmp_path / "dev" / "killed" / "status.json").read_text())["state"] == "running"
        done = status_command(tmp_path)
    finally:
        alive.kill()
        alive.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert table["dev/done"][1:3] == ["finished", "40/40"]
    assert re.search(r"^dev/done .* val/loss \d\.\d+ +val/acc 0\.\d+ +- +0 +\d+s ago$", done.stdout, flags=re.MULTILINE)
    assert table["dev/alive"][1:3] == ["running", "10/40"]  # status.json is rewritten at each checkpoint
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
