"""Checkpoints that survive kill -9: atomic files, a manifest that names the latest, and fallback.

Layout of `<run folder>/checkpoints/`:

    step_000300.pt     a dict loadable with torch.load(weights_only=True); the model is under "model"
    manifest.json      the complete checkpoints, each with its checksum (core/checksums.py), and the latest
                       (core/checkpoint_manifest.py): a checkpoint missing from it was never completed
    best.json          which checkpoint scored best on trainer.best_metric (core/best.py); kept past keep_last

A save writes the checkpoint, then the manifest, each atomically, so a crash at any moment leaves the previous
checkpoint usable. On load, a checkpoint whose checksum fails is reported and skipped, and the one before it is
used. A damaged `manifest.json` is reported too: each checkpoint is then checked by loading it (a file at its final
name was put there whole, by a rename), newest first.

What a save adds to `torch.save` and its fsync is kept off its path where it can be: the checksum is taken on
a thread while the file is fsynced, the checkpoint's rename shares the folder's fsync with the manifest's, and the
checkpoints past keep_last are deleted on a thread.

A save that fails because the disk is full or read-only raises the OSError (torch reports it as a RuntimeError)
and leaves the previous checkpoint as it was.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import torch

from . import checkpoint_manifest, checksums, failpoints
from .best import read as read_best
from .checkpoint_manifest import Manifest, step_of
from .files import delete_later, remove_stale_temporaries, write_atomic

log = logging.getLogger(__name__)

FORMAT = 1  # of a checkpoint file's contents; the manifest has its own


class CheckpointUnreadable(Exception):
    """A checkpoint passed its checksum but does not load."""


class CheckpointDir:
    def __init__(self, folder: Path, keep_last: int) -> None:
        self.folder, self.keep_last = folder, keep_last
        self._rebuilt: Manifest | None = None  # the manifest worked out from the files, when it is damaged
        self._pruning: threading.Thread | None = None  # frees the checkpoints the last save dropped

    def clean(self) -> None:
        """Remove what killed saves left: temporary files, and checkpoints that never reached the manifest."""
        self._wait_for_pruning()
        listed = self._manifest().checkpoints
        orphans = [path for path in self.folder.glob("step_*.pt") if path.name not in listed]
        for path in [*remove_stale_temporaries(self.folder), *orphans]:
            path.unlink(missing_ok=True)
            log.warning("removed %s, left by an interrupted save", path.name)

    def save(self, state: dict[str, Any], step: int) -> Path:
        self._wait_for_pruning()  # the space the last save freed is free before this one fills it again
        name = f"step_{step:06d}.pt"
        path = self.folder / name
        helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checksum")
        hashing: list[Future[str]] = []

        def write(out: IO[bytes]) -> None:
            torch.save({"format": FORMAT, "step": step, **state}, out)
            out.flush()
            # Hashed from the page cache on a thread while write_atomic fsyncs the file, which mostly waits for the
            # disk: the hash then takes no longer than the fsync, not as long again
            # (docs/decisions/0001-checkpoint-hash-while-fsync.md).
            hashing.append(helper.submit(checksums.of_descriptor, os.dup(out.fileno())))
            failpoints.pause_if_requested("save", step)  # the proof kills the process here, mid-save

        # The checkpoint's rename is made durable by the fsync of the folder that writing the manifest ends with
        # (each file's content is fsynced before its rename). Journaling file systems (ext4, XFS) keep renames in
        # order; should a crash keep the manifest's and not the checkpoint's, the manifest still names the
        # checkpoint that was the latest before, and the run falls back to it (test_checkpoint_io).
        try:
            write_atomic(path, write, sync_folder=False)
            digest = hashing[0].result()
        except RuntimeError as error:  # torch's writer wraps the OSError of a full disk
            if isinstance(cause := error.__cause__ or error.__context__, OSError):
                raise OSError(cause.errno, cause.strerror, str(path)) from error
            raise
        finally:
            helper.shutdown()
        current = self._manifest()
        checkpoints = {**current.checkpoints, name: digest}
        # Kept: the newest keep_last up to this step (any after it were left by an attempt that was later rolled
        # back to an earlier checkpoint), and the best one.
        kept = sorted((n for n in checkpoints if step_of(n) <= step), key=step_of)[-self.keep_last :]
        best = (read_best(self.folder) or {}).get("checkpoint")
        if best in checkpoints and step_of(best) <= step:
            kept = sorted({*kept, best}, key=step_of)
        # The one before stays listed until the next save: the fallback should a crash lose this checkpoint's rename.
        fallback = max((n for n in current.checkpoints if step_of(n) < step), key=step_of, default=None)
        listed = sorted({*kept, *([fallback] if fallback else [])}, key=step_of)
        checkpoint_manifest.write(self.folder, {key: checkpoints[key] for key in listed}, name)
        self._rebuilt = None
        # Only now that the manifest names the new file, durably, may the others go; with them a format-1 `latest`.
        doomed = [self.folder / old for old in set(checkpoints) - set(kept)]
        self._pruning = delete_later([*doomed, self.folder / checkpoint_manifest.FORMAT_1_LATEST])
        return path

    def find_latest(self) -> str | None:
        """The name of the newest checkpoint that passes its checksum; a damaged one is reported and skipped."""
        manifest = self._manifest()
        for name in self._candidates(manifest):
            if (problem := _problem(self.folder / name, manifest.checkpoints.get(name))) is None:
                return name
            log.warning("checkpoint %s %s: falling back to the one before it", self.folder / name, problem)
        return None

    def load(self, name: str) -> dict[str, Any]:
        """Load a checkpoint that passed its checksum. If it still does not load, the code or torch changed
        since it was written: that is an error to fix, not a damaged file to skip."""
        try:
            return torch.load(self.folder / name, map_location="cpu", weights_only=True)
        except Exception as error:
            raise CheckpointUnreadable(f"{self.folder / name} is intact but does not load: {error}") from error

    def find_best(self) -> str | None:
        """The name of the best checkpoint (core/best.py), if it is recorded and passes its checksum."""
        best = read_best(self.folder)
        if best is None:
            return None
        name = best["checkpoint"]
        if (problem := _problem(self.folder / name, self._manifest().checkpoints.get(name))) is not None:
            log.warning("the best checkpoint %s %s", self.folder / name, problem)
            return None
        return name

    def load_latest(self) -> dict[str, Any] | None:
        found = self.find_and_load_latest()
        return None if found is None else found[1]

    def find_and_load_latest(self) -> tuple[str, dict[str, Any]] | None:
        """The newest checkpoint that passes its checksum, and what it holds. Each candidate is loaded while its
        checksum is taken on a thread, so that a resume reads the file about once; what a file that then fails
        its checksum held is dropped, never returned."""
        manifest = self._manifest()
        for name in self._candidates(manifest):
            path, expected = self.folder / name, manifest.checkpoints.get(name)
            if (problem := _presence_problem(path, expected)) is None:
                assert expected is not None
                with ThreadPoolExecutor(max_workers=1, thread_name_prefix="checksum") as helper:
                    checking = helper.submit(checksums.matches, path, expected)
                    state: dict[str, Any] = {}
                    try:
                        state, error = self.load(name), None
                    except CheckpointUnreadable as unreadable:
                        error = unreadable
                    intact = checking.result()
                if intact:  # a whole file that does not load is the code's or torch's problem, not damage
                    if error is not None:
                        raise error
                    return name, state
                problem = _checksum_failed(expected)
            log.warning("checkpoint %s %s: falling back to the one before it", path, problem)
        return None

    def _candidates(self, manifest: Manifest) -> list[str]:
        """The latest first, then older complete checkpoints, newest first."""
        if manifest.latest_problem:
            log.warning("%s", manifest.latest_problem)
        latest = manifest.latest
        names = [n for n in manifest.checkpoints if latest is None or step_of(n) <= step_of(latest)]
        names.sort(key=step_of, reverse=True)
        if latest is not None and latest not in names:  # a format-1 `latest` ahead of its manifest: reported
            names.insert(0, latest)
        return names

    def _manifest(self) -> Manifest:
        try:
            return checkpoint_manifest.read(self.folder)
        except checkpoint_manifest.Unreadable as unreadable:
            if self._rebuilt is None:
                path = self.folder / checkpoint_manifest.FILE
                log.warning("%s %s: checking each checkpoint by loading it instead", path, unreadable)
                self._rebuilt = Manifest(self._loadable_checkpoints())
            return self._rebuilt

    def _loadable_checkpoints(self) -> dict[str, str]:
        loadable = {}
        for checkpoint in sorted(self.folder.glob("step_*.pt"), key=lambda found: step_of(found.name)):
            try:
                torch.load(checkpoint, map_location="cpu", weights_only=True)
            except Exception as error:
                log.warning("checkpoint %s does not load (%s): skipped", checkpoint, str(error)[:80])
                continue
            loadable[checkpoint.name] = checksums.of_file(checkpoint)
        return loadable

    def _wait_for_pruning(self) -> None:
        if self._pruning is not None:
            self._pruning.join()
            self._pruning = None


def _problem(path: Path, expected: str | None) -> str | None:
    if (problem := _presence_problem(path, expected)) is not None:
        return problem
    assert expected is not None
    return None if checksums.matches(path, expected) else _checksum_failed(expected)


def _presence_problem(path: Path, expected: str | None) -> str | None:
    """What keeps a checkpoint from being checked at all."""
    if not path.exists():
        return "is missing"
    if expected is None:
        return "is not in manifest.json (its save never completed)"
    if not checksums.known(expected):
        return f"has a {checksums.algorithm(expected)} checksum, which this samebits cannot check: update samebits"
    return None


def _checksum_failed(expected: str) -> str:
    return f"fails its {checksums.algorithm(expected)} checksum (the file is damaged)"
