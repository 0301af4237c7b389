"""Checkpoints that survive kill -9: atomic files, a checksum manifest, a `latest` pointer, and fallback.

Layout of `<run folder>/checkpoints/`:

    step_000300.pt     a dict loadable with torch.load(weights_only=True); the model is under "model"
    manifest.json      {"step_000300.pt": "xxh3_128:<hex>", ...}: a file missing from it was never completed
                       (core/checksums.py; a bare hex digest is an older version's sha256, still checked)
    latest             the name of the newest complete checkpoint, written last
    best.json          which checkpoint scored best on trainer.best_metric (core/best.py); kept past keep_last

A save writes the checkpoint, then the manifest, then `latest`, each atomically, so a crash at any moment
leaves the previous checkpoint usable. On load, a checkpoint whose checksum fails is reported and skipped,
and the one before it is used. A damaged `manifest.json` is reported too: each checkpoint is then checked by
loading it (a file at its final name was put there whole, by a rename). A damaged or missing `latest` is reported,
and the newest checkpoint in the manifest that passes its checksum is used.

What a save adds to `torch.save` and its fsync is kept off its path where it can be: the checksum is taken on
a thread while the file is fsynced, the checkpoint's rename shares the folder's fsync with the manifest's and
`latest`'s, and the checkpoints past keep_last are deleted on a thread.

A save that fails because the disk is full or read-only raises the OSError (torch reports it as a RuntimeError)
and leaves the previous checkpoint as it was.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import torch

from . import checksums, failpoints
from .best import read as read_best
from .files import (
    delete_later,
    remove_stale_temporaries,
    write_atomic,
    write_json,
    write_text,
)

log = logging.getLogger(__name__)

FORMAT = 1
NAME = re.compile(r"step_(\d+)\.pt")


class CheckpointUnreadable(Exception):
    """A checkpoint passed its checksum but does not load."""


class CheckpointDir:
    def __init__(self, folder: Path, keep_last: int) -> None:
        self.folder, self.keep_last = folder, keep_last
        self._rebuilt: dict[str, str] | None = None  # the manifest worked out from the files, when it is damaged
        self._pruning: threading.Thread | None = None  # frees the checkpoints the last save dropped

    def clean(self) -> None:
        """Remove what killed saves left: temporary files, and checkpoints that never reached the manifest."""
        self._wait_for_pruning()
        manifest = self._manifest()
        orphans = [path for path in self.folder.glob("step_*.pt") if path.name not in manifest]
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

        # The renames of the checkpoint and of the manifest are made durable by the fsync of the folder that
        # writing `latest` ends with (each file's content is fsynced before its rename). Journaling file systems
        # (ext4, XFS) keep renames in order; should a crash keep some of the three and not the others, find_latest
        # falls back to the checkpoint before, as for any file missing or not in the manifest (test_checkpoint_io).
        try:
            write_atomic(path, write, sync_folder=False)
            digest = hashing[0].result()
        except RuntimeError as error:  # torch's writer wraps the OSError of a full disk
            if isinstance(cause := error.__cause__ or error.__context__, OSError):
                raise OSError(cause.errno, cause.strerror, str(path)) from error
            raise
        finally:
            helper.shutdown()
        manifest = {**self._manifest(), name: digest}
        # Kept: the newest keep_last up to this step (any after it were left by an attempt that was later rolled
        # back to an earlier checkpoint), and the best one. The manifest is written once, already without what this
        # save prunes, except the checkpoint `latest` names until it is rewritten: a crash in between must still
        # find it. That one is outside `kept` only with keep_last=1, which then takes a second write.
        kept = sorted((n for n in manifest if _step(n) <= step), key=_step)[-self.keep_last :]
        if (best := read_best(self.folder)) and best["checkpoint"] in manifest and _step(best["checkpoint"]) <= step:
            kept = sorted({*kept, best["checkpoint"]}, key=_step)
        previous = self._named_latest()
        written = kept if previous not in manifest else sorted({*kept, previous}, key=_step)
        write_json(self.folder / "manifest.json", {key: manifest[key] for key in written}, sync_folder=False)
        write_text(self.folder / "latest", name)
        if written != kept:
            write_json(self.folder / "manifest.json", {key: manifest[key] for key in kept})
        self._rebuilt = None
        # Only now that `latest` names the new file may the others go.
        self._pruning = delete_later([self.folder / old for old in set(manifest) - set(kept)])
        return path

    def find_latest(self) -> str | None:
        """The name of the newest checkpoint that passes its checksum; a damaged one is reported and skipped."""
        manifest = self._manifest()
        for name in self._candidates(manifest):
            if (problem := _problem(self.folder / name, manifest.get(name))) is None:
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
        if (problem := _problem(self.folder / name, self._manifest().get(name))) is not None:
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
            path, expected = self.folder / name, manifest.get(name)
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

    def _named_latest(self) -> str | None:
        latest_file = self.folder / "latest"
        return latest_file.read_text(errors="replace").strip() if latest_file.exists() else None

    def _candidates(self, manifest: dict[str, str]) -> list[str]:
        """`latest` first, then older complete checkpoints, newest first."""
        latest_file = self.folder / "latest"
        latest = self._named_latest()
        if latest is None and manifest:  # deleted, or a save was killed just before writing it
            log.warning("%s is missing: using the newest checkpoint in the manifest", latest_file)
        elif latest is not None and not NAME.fullmatch(latest):
            log.warning("%s is damaged (%r): using the newest checkpoint in the manifest", latest_file, latest[:40])
            latest = None
        names = sorted((n for n in manifest if latest is None or _step(n) <= _step(latest)), key=_step, reverse=True)
        if latest is not None and latest not in names:
            names.insert(0, latest)
        return names

    def _manifest(self) -> dict[str, str]:
        path = self.folder / "manifest.json"
        if not path.exists():
            return {}
        try:
            manifest = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            manifest = None
        if isinstance(manifest, dict) and all(isinstance(value, str) for value in manifest.values()):
            return manifest
        if self._rebuilt is None:
            log.warning("%s is damaged: checking each checkpoint by loading it instead", path)
            self._rebuilt = {}
            for checkpoint in sorted(self.folder.glob("step_*.pt"), key=lambda found: _step(found.name)):
                try:
                    torch.load(checkpoint, map_location="cpu", weights_only=True)
                except Exception as error:
                    log.warning("checkpoint %s does not load (%s): skipped", checkpoint, str(error)[:80])
                    continue
                self._rebuilt[checkpoint.name] = checksums.of_file(checkpoint)
        return self._rebuilt

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


def _step(name: str) -> int:
    match = NAME.fullmatch(name)
    return int(match.group(1)) if match else -1
