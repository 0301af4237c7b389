"""The proof's training processes, forked from a server that has imported torch once.

Each run of the proof is still its own OS process: its own pid, real signals, a real kill -9, its own exit code.
What it no longer pays is the interpreter's start-up. Importing torch takes seconds of CPU, and the proof starts
18 processes of its own (torchrun's 8 workers are forked by torchrun's launcher: forked_torchrun.py). The server
imports what the runs import (the caller names it: the proof names samebits' entry, and with it torch and
Hydra), and does nothing else: it trains nothing, seeds and draws from no generator, starts no thread and never
touches a GPU. A child takes the run's environment and arguments, then runs the module as `python -m` would;
everything a run computes, from its seeds on, happens after the fork.

The server is multiprocessing's fork server, one per process. It starts with what every run shares in its
environment (PYTHONHASHSEED above all, which an interpreter reads only as it starts); each child then takes its own
run's environment whole. `<package> proof --fresh` starts each run as a new interpreter instead.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import runpy
import subprocess
import sys
from multiprocessing.context import ForkServerContext
from pathlib import Path

from ..core import failpoints


def start_server(preload: list[str], environment: dict[str, str], warnings: Path) -> ForkServerContext:
    """Start the server, importing `preload`, with `environment` added to this process's for it alone.

    The server is a new interpreter: it imports `preload` through the environment (on Python 3.11 it takes no
    sys.path from this process), and a module it cannot import is skipped, silently; the runs then import it
    themselves, slower but the same. Each run takes this process's sys.path and folder, as multiprocessing sends
    them to every child: those of a fresh `python -m` started here.

    The runs share multiprocessing's resource tracker, which this starts first with its stderr on `warnings`: a run
    that ends at once (failpoints.exit_without_teardown) leaves its DataLoader's semaphores for the tracker to
    remove, and it says so, as a fresh run's own tracker does into that run's stderr."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    stderr = os.dup(2)
    with warnings.open("a") as log:
        os.dup2(log.fileno(), 2)  # inherited by the tracker as it starts
        try:
            multiprocessing.resource_tracker.ensure_running()
        finally:
            os.dup2(stderr, 2)
            os.close(stderr)
    ours = dict(os.environ)
    os.environ.update(environment)
    try:
        multiprocessing.forkserver.ensure_running()  # returns once started; the imports go on meanwhile
    finally:
        os.environ.clear()
        os.environ.update(ours)
    return context


class Forked:
    """A module run in a forked process, seen through the part of `subprocess.Popen` that the proof uses."""

    def __init__(self, context: ForkServerContext, module: str, args: list[str], env: dict[str, str], stderr: Path):
        self._process = context.Process(target=_run_module, args=(module, args, env, str(stderr)), name=module)
        self._process.start()
        self.pid = self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self._process.name, timeout or 0)
        return self._process.exitcode

    def send_signal(self, signum: int) -> None:
        os.kill(self._process.pid or 0, signum)

    def kill(self) -> None:
        self._process.kill()


def _run_module(module: str, args: list[str], env: dict[str, str], stderr: str) -> None:
    """In the forked child (in the parent's folder, on its sys.path): become `python -m module args` with
    environment `env`, output to `stderr`."""
    os.environ.clear()
    os.environ.update(env)
    with open(os.devnull, "w") as devnull, open(stderr, "w") as errors:
        os.dup2(devnull.fileno(), sys.stdout.fileno())
        os.dup2(errors.fileno(), sys.stderr.fileno())
    code = run_as_main(module, args)
    # Never back into multiprocessing, whose own exit would differ from the interpreter's a real run ends with.
    failpoints.exit_without_teardown(code)


def run_as_main(module: str, args: list[str]) -> int:
    """Run `python -m module args` in this forked process, its generators reseeded first; its exit status. A crash
    ends as Python ends it: traceback on stderr, status 1."""
    _seed_from_the_system()
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as stop:
        return failpoints.exit_status(stop.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1


def _seed_from_the_system() -> None:
    """Give torch's and NumPy's global generators a seed from the system, as each gets in a fresh interpreter.

    Forked, a run would otherwise start from the server's seeds, the same in every run, and a run that forgot to
    seed would repeat its twin's bits: the proof's first row would pass where it must fail. (Python's `random`
    reseeds itself in a forked child.)"""
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    if "torch" in sys.modules:
        sys.modules["torch"].seed()
