"""A stop signal sets a flag for the loop; DataLoader workers ignore it."""

from __future__ import annotations

import os
import signal
from importlib import import_module

import pytest

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
