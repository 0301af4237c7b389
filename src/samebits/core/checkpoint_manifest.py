"""A checkpoint folder's manifest: which checkpoints are complete, each one's checksum, and which is the latest.

Format 2 is one file, so that one atomic rename makes a new checkpoint both complete and the latest, and a save
fsyncs one small file, not two (docs/decisions/0019-latest-in-the-checkpoint-manifest.md):

    manifest.json   {"format": 2, "latest": "step_000300.pt",
                     "checksums": {"step_000300.pt": "xxh3_128:<hex>", "step_000200.pt": ...}}

`checksums` also names, until the next save, the checkpoint that was the latest before: the renames of the
checkpoint and of the manifest share one fsync of the folder, and should a crash keep the manifest's and lose the
checkpoint's, the run falls back to that one. With keep_last=1 its file is deleted once the save is durable, and
its entry names a file that is no longer there until the next save drops it.

Format 1, which earlier versions wrote, is a flat manifest, {"step_000300.pt": "<checksum>", ...}, and the
latest's name in a file of its own, `latest`, written after it. A format-1 folder still loads as it did; its next
save writes format 2 and removes `latest`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .files import write_json

FORMAT = 2
FILE = "manifest.json"
FORMAT_1_LATEST = "latest"
NAME = re.compile(r"step_(\d+)\.pt")


@dataclass(frozen=True)
class Manifest:
    checkpoints: dict[str, str]  # name: checksum (core/checksums.py)
    latest: str | None = None  # None: none named, the newest in `checkpoints` is tried first
    latest_problem: str | None = None  # why a format-1 folder names none: its `latest` is missing or damaged


class Unreadable(Exception):
    """The manifest is damaged, or from a newer samebits: the message says which."""


def read(folder: Path) -> Manifest:
    """The folder's manifest; an empty one if there is none. Raises Unreadable."""
    try:
        data = json.loads((folder / FILE).read_text())
    except FileNotFoundError:
        return Manifest({})
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise Unreadable("is damaged") from error
    if not isinstance(data, dict):
        raise Unreadable("is damaged")
    if "format" not in data:
        if not _checksums(data):
            raise Unreadable("is damaged")
        return _format_1(folder, data)
    version = data["format"]
    if isinstance(version, int) and version > FORMAT:
        raise Unreadable(f"is in format {version}, from a newer samebits: update samebits")
    checkpoints, latest = data.get("checksums"), data.get("latest")
    if version != FORMAT or not isinstance(checkpoints, dict) or not _checksums(checkpoints):
        raise Unreadable("is damaged")
    if latest not in checkpoints:
        raise Unreadable("is damaged")
    return Manifest(checkpoints, latest)


def write(folder: Path, checkpoints: dict[str, str], latest: str) -> None:
    """Write the manifest atomically and make it, and every rename in the folder before it, durable."""
    write_json(folder / FILE, {"format": FORMAT, "latest": latest, "checksums": checkpoints})


def step_of(name: str) -> int:
    match = NAME.fullmatch(name)
    return int(match.group(1)) if match else -1


def _checksums(entries: dict[object, object]) -> bool:
    return all(isinstance(name, str) and isinstance(value, str) for name, value in entries.items())


def _format_1(folder: Path, checkpoints: dict[str, str]) -> Manifest:
    pointer = folder / FORMAT_1_LATEST
    if not pointer.exists():  # deleted, or a save was killed just before writing it
        problem = f"{pointer} is missing: using the newest checkpoint in the manifest" if checkpoints else None
        return Manifest(checkpoints, None, problem)
    latest = pointer.read_text(errors="replace").strip()
    if not NAME.fullmatch(latest):
        damaged = f"{pointer} is damaged ({latest[:40]!r}): using the newest checkpoint in the manifest"
        return Manifest(checkpoints, None, damaged)
    return Manifest(checkpoints, latest)
