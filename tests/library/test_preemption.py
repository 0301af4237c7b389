"""A stop signal sets a flag for the loop; DataLoader workers ignore it; once the stop's checkpoint is written,
more stop signals change nothing."""

from __future__ import annotations

import json
import os
import signal
import time
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.runs import start, stopped_at_the_end, wait_for

preemption = import_module("samebits.core.preemption")


@pytest.fixture
def handlers() -> object:
    saved = {signum: signal.getsignal(signum) for signum in preemption.STOP_SIGNALS}
    preemption._received.clear()
    preemption.install_handlers()
    yield preemption
    preemption._received.clear()
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT])
def test_a_stop_signal_sets_the_flag_and_does_not_kill(handlers: object, signum: int) -> None:
    assert not preemption.stop_requested()
    os.kill(os.getpid(), signum)
    assert preemption.stop_requested()
    assert preemption.received_signal() == signal.Signals(signum).name


def test_workers_ignore_stop_signals(handlers: object) -> None:
    preemption.ignore_in_worker(0)
    assert all(signal.getsignal(signum) == signal.SIG_IGN for signum in preemption.STOP_SIGNALS)


def test_a_second_ctrl_c_does_not_wait_for_the_step(handlers: object) -> None:
    os.kill(os.getpid(), signal.SIGINT)
    assert preemption.outcome() == ("interrupted", 130)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize(("signum", "outcome"), [(signal.SIGTERM, ("preempted", 75)), (None, ("paused", 75))])
def test_each_stop_has_its_state_and_exit_code(handlers: object, signum: int | None, outcome: tuple) -> None:
    if signum is not None:
        os.kill(os.getpid(), signum)
    assert preemption.outcome() == outcome


def test_stop_signals_repeated_while_the_run_exits_leave_its_exit_code_75(data_dir: Path, tmp_path: Path) -> None:
    """Slurm, scancel and job.sh may signal a stopping run again. Python puts back the default action of its
    handled signals as it exits, so a late SIGTERM ended the saved run with 143, which job.sh and Slurm do not
    read as "start me again"."""
    marker = tmp_path / "paused"
    process = start(tmp_path, data_dir, marker, "run_name=signalled")
    with stopped_at_the_end(process):
        wait_for(marker.exists, "the run to reach step 15")
        process.send_signal(signal.SIGTERM)
        status = tmp_path / "dev" / "signalled" / "status.json"
        wait_for(lambda: status.exists() and json.loads(status.read_text())["state"] == "preempted", "the save")
        sent = 0
        while process.poll() is None:  # from the save to the end of the process, through the interpreter's exit
            process.send_signal(signal.SIGTERM)
            sent += 1
            time.sleep(0.001)
        _, stderr = process.communicate()
    assert sent > 10 and process.returncode == 75, (sent, stderr[-2000:])
