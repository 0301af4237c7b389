"""One run folder, one writer: processes started together on one config train it once, and Ctrl-C saves.

A run paused at a step (the reproducibility proof's pause, ended by a stop signal) holds its folder while the
others start, so which process wins is a race, but that exactly one trains is not.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import SHORT, RunTraining, start, stopped_at_the_end, wait_for


@pytest.mark.parametrize("ckpt_every", [10, 1])
def test_three_processes_on_one_config_train_it_once(
    run_training: RunTraining, data_dir: Path, tmp_path: Path, ckpt_every: int
) -> None:
    overrides = [f"trainer.ckpt_every={ckpt_every}", "run_name=shared"]
    marker = tmp_path / "paused"
    processes = [start(tmp_path, data_dir, marker, *overrides) for _ in range(3)]
    with stopped_at_the_end(*processes):
        wait_for(lambda: marker.exists() and sum(p.poll() is not None for p in processes) == 2, "two to give up")
        (winner,) = [p for p in processes if p.poll() is None]
        for loser in (p for p in processes if p is not winner):
            _, stderr = loser.communicate()
            assert loser.returncode == 73, stderr
            assert stderr.startswith(f"error: {tmp_path / 'dev' / 'shared'} is in use by pid {winner.pid} on ")
            assert "Traceback" not in stderr
        winner.send_signal(signal.SIGTERM)  # ends the pause: the winner saves at step 15 and exits to be requeued
        assert winner.wait(timeout=120) == 75
    finished = run_training(tmp_path, *SHORT, *overrides)
    assert finished.returncode == 0, finished.stderr

    run_dir = tmp_path / "dev" / "shared"
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 41))  # every step once, in order
    folder = run_dir / "checkpoints"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(path.name for path in folder.glob("step_*.pt")) == sorted(manifest["checksums"])  # no orphans
    assert list(folder.glob(".*")) == []  # no temporary files


def test_ctrl_c_saves_at_the_step_and_exits_130_then_the_run_resumes(
    run_training: RunTraining, data_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "paused"
    process = start(tmp_path, data_dir, marker, "run_name=interrupted")
    with stopped_at_the_end(process):
        wait_for(marker.exists, "the run to reach step 15")
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "stopped at step 15 by SIGINT: checkpoint saved, exiting with code 130" in stdout
    run_dir = tmp_path / "dev" / "interrupted"
    status = json.loads((run_dir / "status.json").read_text())
    assert (status["state"], status["step"]) == ("interrupted", 15)
    resumed = run_training(tmp_path, *SHORT, "run_name=interrupted")
    assert resumed.returncode == 0 and "resumed from the checkpoint at step 15" in resumed.stdout


def test_relative_runs_folders_are_relative_to_the_project_wherever_a_run_starts(
    run_training: RunTraining, data_dir: Path, tmp_path: Path
) -> None:
    relative = os.path.relpath(tmp_path / "runs", ROOT)
    env = {**os.environ, "RUNS_DIR": relative, "DATA_DIR": str(data_dir)}
    before = sorted(path.name for path in (ROOT / "src").iterdir())
    command = [sys.executable, "-m", f"{PACKAGE}.train", "trainer.progress_bar=false", *SHORT, "run_name=from-src"]
    done = subprocess.run(command, cwd=ROOT / "src", env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "dev" / "from-src" / "summary.json").exists()
    assert sorted(path.name for path in (ROOT / "src").iterdir()) == before


def test_under_torchrun_rank_0_holds_the_lock_and_every_rank_gives_up(
    run_training: RunTraining, data_dir: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "dev" / "ddp"
    run_dir.mkdir(parents=True)
    with (run_dir / "run.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a process training this run would
        env = {**os.environ, "RUNS_DIR": str(tmp_path), "DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m",
                   f"{PACKAGE}.train", "trainer.progress_bar=false", *SHORT, "run_name=ddp"]  # fmt: skip
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert done.stderr.count(f"error: {run_dir} is in use by ") == 1, done.stderr  # said once, by rank 0
    # torchrun reports (with its own traceback) the first rank it sees fail: rank 0 with 73, or
    # the other rank, aborted (SIGABRT, seen once) by its process group while exiting after rank 0 had gone
    assert "exitcode  : 73 " in done.stderr or "(SIGABRT) received by PID" in done.stderr, done.stderr
    assert sorted(path.name for path in run_dir.iterdir()) == ["run.lock"]  # no rank wrote anything
