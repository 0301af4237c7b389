"""A stop signal sets a flag for the loop; DataLoader workers ignore it."""

from __future__ import annotations

import os
import signal
from importlib import import_module

import pytest

from conftest import PACKAGE

preemption = import_module(f"{PACKAGE}.core.preemption")


@pytest.fixture
def handlers() -> object:
    saved = {signum: signal.getsignal(signum) for signum in preemption.STOP_SIGNALS}
    preemption._received.clear()
    preemption.install_handlers()
    yield preemption
    preemption._received.clear()
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2])
def test_a_stop_signal_sets_the_flag_and_does_not_kill(handlers: object, signum: int) -> None:
    assert not preemption.stop_requested()
    os.kill(os.getpid(), signum)
    assert preemption.stop_requested()
    assert preemption.received_signal() == signal.Signals(signum).name


def test_workers_ignore_stop_signals(handlers: object) -> None:
    preemption.ignore_in_worker(0)
    assert all(signal.getsignal(signum) == signal.SIG_IGN for signum in preemption.STOP_SIGNALS)
