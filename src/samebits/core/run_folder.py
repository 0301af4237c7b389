"""One run folder, one writer, and an honest record of how each attempt ended.

A run folder belongs to one process at a time: rank 0 holds an exclusive `flock` on `<run folder>/run.lock` for
the whole attempt. The kernel releases it when the process ends, however it ends (kill -9 included), so a lock is
never stale. A second process on the same run exits at once with code 73 and names the holder. The lock file
holds the holder's host and pid; it is never deleted, because deleting a lock file lets two processes hold
"the same" lock on two different files.

A run name is one config: a run folder whose saved config differs from the requested one is refused, naming the
settings that differ. Settings that cannot change what is learned (paths, logging, checkpoint cadence: see
NON_IDENTITY_KEYS in core/config.py) may differ between attempts.

`status.json` says how the latest attempt ended: running, finished, paused, preempted, interrupted or failed
(with a one-line reason). Its `step` is the step of the latest checkpoint, where a new attempt resumes. While an
attempt runs, a heartbeat thread rewrites it every HEARTBEAT_S seconds, so that its age tells a live run on
another machine from a dead one (launch/observe.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from omegaconf import OmegaConf

from . import distributed, lock_holder, preemption
from .config import flatten, identity
from .divergence import Diverged
from .errors import (
    RUN_LOCKED,
    STORAGE_ERROR,
    USAGE_ERROR,
    Exit,
    Interrupted,
    RunFailed,
    RunLocked,
    Stopped,
    StorageError,
    UsageError,
)
from .files import utc_now, write_json
from .locks import try_exclusive
from .run_files import RunFiles
from .states import AttemptState

log = logging.getLogger(__name__)

LOG_FORMAT = "[%(asctime)s][%(levelname)s] %(message)s"
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class RunFolder:
    def __init__(self, run_dir: Path, context: distributed.Context) -> None:
        self.run_dir, self.context = run_dir, context
        self.files = RunFiles(run_dir)
        self.step = 0  # the step of the latest checkpoint: where the next attempt resumes
        self._lock: int | None = None
        self._status: dict[str, Any] = {}
        self._trackers_off: dict[str, str] = {}  # tracker -> why it was switched off during this attempt
        self._writing = threading.Lock()  # the heartbeat thread and the loop both write status.json
        self._heartbeat: threading.Thread | None = None

    def claim(self, settings: Mapping[str, Any], run_name: str, allow_code_change: bool = False) -> None:
        """Lock the folder (rank 0) and refuse a config other than the one it was started with, on every rank.
        With `allow_code_change`, settings that exist on one side only (added or retired by new code) may differ.
        """
        refusal = self._claim(settings, run_name, allow_code_change) if self.context.is_main else None
        refusal = distributed.from_main(self.context, refusal)
        if refusal is not None:
            code, line = refusal
            refused = {RUN_LOCKED: RunLocked, STORAGE_ERROR: StorageError}.get(code, UsageError)
            raise refused(*([line] if self.context.is_main else []))  # rank 0 says why, once
        if self.context.is_main:
            handler = logging.FileHandler(self.files.log)  # only now: the holder writes the log alone
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
            logging.getLogger().addHandler(handler)

    def finished_metrics(self) -> dict[str, float] | None:
        path = self.files.summary
        return json.loads(path.read_text())["metrics"] if path.exists() else None

    def record(self, state: AttemptState, step: int | None = None, reason: str | None = None) -> None:
        """Write status.json (rank 0): the state, the latest checkpoint's step, and for a failure, why."""
        if step is not None:
            self.step = step
        if self.context.is_main:
            with self._writing:
                self._status = {"state": state, "step": self.step} | ({"reason": reason} if reason else {})
                self._status |= {"trackers_off": self._trackers_off} if self._trackers_off else {}
                write_json(self.files.status, self._status | {"updated_at": utc_now()})
            if state == "running" and self._heartbeat is None:
                self._heartbeat = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
                self._heartbeat.start()

    def stop(self, step: int, close: Callable[[AttemptState], None], stop_at: int | None) -> NoReturn:
        """End the attempt at a step boundary, after its checkpoint: a signal (preempted, interrupted) or
        trainer.stop_at_step (paused). Exits with the code that says whether to requeue."""
        state, code = preemption.outcome()
        why = preemption.received_signal() or f"trainer.stop_at_step={stop_at}"
        log.info("stopped at step %d by %s: checkpoint saved, exiting with code %d (start again to resume)", step, why,
                 code)  # fmt: skip
        self.record(state, step)
        close(state)
        distributed.stop(self.context)
        raise Stopped(exit_code=code)

    def finish(self, step: int, run_name: str, summary: Callable[[], dict[str, Any]]) -> None:
        """Write summary.json (rank 0; `summary` is called there only) and record the run as finished."""
        if self.context.is_main:
            written = summary()
            write_json(self.files.summary, written)
            metrics = "  ".join(f"{key}={value:.4g}" for key, value in written["metrics"].items())
            log.info("finished %s: %s", run_name, metrics)
            log.info("params_sha256=%s", written["params_sha256"])
        self.record("finished", step)
        distributed.stop(self.context)

    def note_tracker_off(self, tracker: str, reason: str) -> None:
        """Say in status.json that a tracker was switched off, and why (until the attempt ends)."""
        self._trackers_off[tracker] = reason
        self.record(self._status.get("state", "running"), reason=self._status.get("reason"))

    def _beat(self) -> None:
        """Rewrite status.json every HEARTBEAT_S while the attempt is running, between checkpoints too."""
        while True:
            time.sleep(lock_holder.HEARTBEAT_S)
            with self._writing, contextlib.suppress(OSError):  # a full disk is the loop's to report
                if self._status.get("state") != "running":
                    return
                write_json(self.files.status, self._status | {"updated_at": utc_now()})

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """Record how the attempt ends when the loop itself cannot: a second Ctrl-C, a diverged loss, a full or
        read-only disk (one line each, and the latest checkpoint is kept), or a bug (status failed, traceback)."""
        try:
            yield
        except Exit:  # decided by the loop, which recorded its state
            raise
        except KeyboardInterrupt:
            self._end("interrupted", "stopped at once by a second Ctrl-C", Interrupted)
        except Diverged as error:
            self._end("failed", str(error), RunFailed)
        except OSError as error:
            if error.errno not in NO_SPACE + NOT_WRITABLE:
                self._record_failure(error)
                raise
            self._end("failed", _storage_problem(error, self.run_dir), StorageError)
        except Exception as error:  # a bug: the traceback is needed, and the status must not say "running"
            self._record_failure(error)
            raise

    def _claim(self, settings: Mapping[str, Any], run_name: str, allow_code_change: bool) -> tuple[int, str] | None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.files.lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as error:
            return STORAGE_ERROR, _storage_problem(error, self.run_dir)
        if not try_exclusive(descriptor):
            holder = lock_holder.named_holder(descriptor)
            os.close(descriptor)
            return RUN_LOCKED, (
                f"{self.run_dir} is in use by {holder}: that run is training now; wait for it to end, or stop it"
            )
        if differing := _differing_settings(self.files.config, settings, allow_code_change):
            os.close(descriptor)  # releases the lock
            return USAGE_ERROR, (
                f"run {run_name} was started with other settings ({'; '.join(differing[:5])}): leave run_name "
                "unset to get a name for this config, or pick another run_name (a setting that new code added or "
                "retired may differ with trainer.allow_code_change=true)"
            )
        self._lock = descriptor  # held for the life of the process; the kernel releases it however that ends
        # A forked child (a DataLoader worker) would share the lock and keep it for a few seconds after a kill -9
        # of this process, so that a requeued run found its folder busy: children close their copy at once.
        identity = os.fstat(descriptor)
        os.register_at_fork(after_in_child=lambda: _close_if_same(descriptor, identity))
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, lock_holder.line().encode(), 0)
        return None

    def _end(self, state: AttemptState, reason: str, ending: type[Exit]) -> NoReturn:
        with contextlib.suppress(OSError):  # on a full disk even status.json may not fit
            self.record(state, reason=reason)
        message = f"{reason}; the checkpoint at step {self.step} is kept" if self.step else reason
        raise ending(*([message] if self.context.is_main else [])) from None

    def _record_failure(self, error: BaseException) -> None:
        with contextlib.suppress(OSError):
            self.record("failed", reason=f"{type(error).__name__}: {error}")


def _close_if_same(descriptor: int, lock: os.stat_result) -> None:
    """Close `descriptor` if it is still the lock file (not a number reused by another file since)."""
    with contextlib.suppress(OSError):
        found = os.fstat(descriptor)
        if (found.st_dev, found.st_ino) == (lock.st_dev, lock.st_ino):
            os.close(descriptor)


def _differing_settings(saved: Path, settings: Mapping[str, Any], allow_code_change: bool) -> list[str]:
    """`key: saved -> requested` for each identity setting that differs from the run's saved config."""
    if not saved.exists():
        return []
    before, after = flatten(identity(OmegaConf.load(saved))), flatten(settings)  # type: ignore[arg-type]
    compared = before.keys() & after.keys() if allow_code_change else before.keys() | after.keys()
    keys = sorted(key for key in compared if before.get(key) != after.get(key))
    return [f"{key}: {before.get(key, '(unset)')} -> {after.get(key, '(unset)')}" for key in keys]


def _storage_problem(error: OSError, run_dir: Path) -> str:
    where = error.filename or run_dir
    if error.errno in NO_SPACE:
        return f"the disk holding {where} is full ({error.strerror}): free space, or set RUNS_DIR to a larger disk"
    return f"cannot write {where} ({error.strerror}): make the runs folder writable, or set RUNS_DIR to one"
