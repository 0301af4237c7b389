"""A run folder has one writer, keeps its config, and its status says how the latest attempt ended."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from importlib import import_module
from pathlib import Path

import pytest
from omegaconf import OmegaConf

run_folder = import_module("samebits.core.run_folder")
distributed = import_module("samebits.core.distributed")
divergence = import_module("samebits.core.divergence")
errors = import_module("samebits.core.errors")
lock_holder = import_module("samebits.core.lock_holder")

ALONE = distributed.Context(rank=0, local_rank=0, world_size=1)
SETTINGS = {"seed": 0, "optim": {"lr": 0.003}}


def claimed(run_dir: Path) -> object:
    folder = run_folder.RunFolder(run_dir, ALONE)
    folder.claim(SETTINGS, "demo")
    return folder


def refusal(run_dir: Path, settings: dict[str, object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stopped, errors.exit_on_error():
        run_folder.RunFolder(run_dir, ALONE).claim(settings, "demo")
    return stopped.value.code, capsys.readouterr().err


def test_a_second_claim_is_refused_with_the_holder_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claimed(tmp_path / "run")
    code, message = refusal(tmp_path / "run", SETTINGS, capsys)
    assert code == errors.RUN_LOCKED == 73
    assert message.startswith(f"error: {tmp_path / 'run'} is in use by pid {os.getpid()} on ")
    assert len(message.splitlines()) == 1


def test_a_refusal_in_the_moment_before_the_holder_names_itself_waits_for_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The holder writes its line just after taking the lock; until then the file may hold nothing, or the line of
    an earlier holder that died. The refusal names the live holder, not "another process" or the dead one."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = tmp_path / "run.lock"
    lock.write_text(f"pid {dead.stdout.strip()} on {socket.gethostname()} since 2026-01-01T00:00:00+00:00\n")
    descriptor = os.open(lock, os.O_RDWR)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    late = threading.Timer(0.3, lambda: os.pwrite(descriptor, lock_holder.line().encode(), 0))
    late.start()
    try:
        code, message = refusal(tmp_path, SETTINGS, capsys)
    finally:
        late.join()
        os.close(descriptor)
    assert code == errors.RUN_LOCKED
    assert message.startswith(f"error: {tmp_path} is in use by pid {os.getpid()} on {socket.gethostname()} since ")


def test_the_kernel_releases_the_lock_of_a_killed_holder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
         "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(tmp_path / "run.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(errors.RunLocked):
        run_folder.RunFolder(tmp_path, ALONE).claim(SETTINGS, "demo")
    holder.kill()  # kill -9: no cleanup runs
    holder.wait()
    run_folder.RunFolder(tmp_path, ALONE).claim(SETTINGS, "demo")


def test_another_config_under_a_started_name_is_refused_naming_the_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml({**SETTINGS, "run_name": "demo", "paths": {"x": 1}}))
    code, message = refusal(run_dir, {"seed": 0, "optim": {"lr": 0.001}}, capsys)
    assert code == errors.USAGE_ERROR
    assert message.startswith("error: run demo was started with other settings (optim.lr: 0.003 -> 0.001)")
    run_folder.RunFolder(run_dir, ALONE).claim(SETTINGS, "demo")  # the same settings: no complaint


def test_new_code_may_add_or_retire_settings_but_not_change_shared_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml({**SETTINGS, "trainer": {"retired": True}}))
    added = {**SETTINGS, "optim": {"lr": 0.003, "new_setting": 1}}
    code, message = refusal(run_dir, added, capsys)
    assert code == errors.USAGE_ERROR and "optim.new_setting: (unset) -> 1; trainer.retired: True -> (unset)" in message
    other = tmp_path / "other"  # a second copy: the claim below keeps its lock on the first
    other.mkdir()
    (other / "config.yaml").write_bytes((run_dir / "config.yaml").read_bytes())
    run_folder.RunFolder(run_dir, ALONE).claim(added, "demo", allow_code_change=True)
    with (
        pytest.raises(SystemExit) as stopped,
        errors.exit_on_error(),
    ):  # a shared setting with another value is another config, always
        run_folder.RunFolder(other, ALONE).claim({**added, "seed": 1}, "demo", allow_code_change=True)
    assert stopped.value.code == errors.USAGE_ERROR and "(seed: 0 -> 1)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("raised", "code", "state", "message"),
    [
        (divergence.Diverged(17), errors.FAILED, "failed", "error: the loss became non-finite (nan or inf) at step 17"),
        (OSError(errno.ENOSPC, "No space left on device", "x.pt"), errors.STORAGE_ERROR, "failed",
         "error: the disk holding x.pt is full"),
        (OSError(errno.EROFS, "Read-only file system", "x.pt"), errors.STORAGE_ERROR, "failed",
         "error: cannot write x.pt"),
        (KeyboardInterrupt(), errors.INTERRUPTED, "interrupted", "interrupted: stopped at once by a second Ctrl-C"),
    ],
)  # fmt: skip
def test_each_way_out_is_recorded_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raised: BaseException, code: int, state: str, message: str
) -> None:
    folder = claimed(tmp_path)
    folder.record("running", 40)
    with pytest.raises(SystemExit) as stopped, errors.exit_on_error(), folder.attempt():
        raise raised
    assert stopped.value.code == code
    reported = capsys.readouterr().err
    assert reported.startswith(message) and reported.strip().endswith("the checkpoint at step 40 is kept")
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["state"] == state and status["step"] == 40 and message.split(": ", 1)[1] in status["reason"]


def test_a_bug_keeps_its_traceback_and_is_recorded_as_failed(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    with pytest.raises(ZeroDivisionError), folder.attempt():
        1 / 0  # noqa: B018
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["state"] == "failed" and status["reason"] == "ZeroDivisionError: division by zero"


def test_a_forked_child_does_not_keep_the_lock_after_its_parent_lets_go(tmp_path: Path) -> None:
    """DataLoader workers are forked: they must not hold the run folder when the trainer is gone."""
    folder = claimed(tmp_path)
    ready, started = os.pipe()
    child = os.fork()
    if child == 0:  # the child: outlive the parent's hold on the lock, as a worker does after a kill -9
        os.write(started, b"x")
        time.sleep(30)
        os._exit(0)
    try:
        assert os.read(ready, 1) == b"x"  # the child runs (its fork hooks have run)
        os.close(folder._lock)  # the trainer is gone
        run_folder.RunFolder(tmp_path, ALONE).claim(SETTINGS, "demo")  # the child, still alive, holds nothing
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(ready)
        os.close(started)
