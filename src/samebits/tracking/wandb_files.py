"""What wandb wrote for a run, read back from its local files: `<run folder>/wandb/*-<id>/run-<id>.wandb`.

wandb writes every record of a run (history rows, config, summary), online or offline, to one such file per
attempt, in LevelDB's log format after a 7-byte header: blocks of 32 KiB, each record with a CRC-32 of its type
and data, a length and a type (whole, or first, middle and last piece). A record cut short by a kill fails its
CRC, and reading stops there: what is returned is what the file durably holds. The wandb tracker reads these
files to resume exactly where the run's wandb record ends; tests read them to check what wandb received.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HEADER = b":W&B"
BLOCK = 32 * 1024
RECORD_HEADER = 7  # CRC (4 bytes), length (2), type (1)
WHOLE, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def attempt_files(wandb_dir: Path, run_id: str) -> list[Path]:
    """Each attempt's file, oldest first, by the start time in its folder's name: `[offline-]run-<time>-<id>`."""
    return sorted(wandb_dir.glob(f"*run-*-{run_id}/run-{run_id}.wandb"), key=_started)


def runs_under(folder: Path) -> dict[str, list[Path]]:
    """Every wandb run whose files lie anywhere under `folder`: {run id: its attempts' files, oldest first}."""
    found: dict[str, list[Path]] = {}
    for path in folder.rglob("*run-*/run-*.wandb"):
        found.setdefault(path.stem.removeprefix("run-"), []).append(path)
    return {run_id: sorted(paths, key=_started) for run_id, paths in sorted(found.items())}


def history(wandb_dir: Path, run_id: str) -> list[dict[str, Any]]:
    """Every history row wandb holds for the run, across attempts, without wandb's own `_step`, `_runtime` and
    `_timestamp`."""
    rows = []
    for path in attempt_files(wandb_dir, run_id):
        for record in records(path):
            if record.WhichOneof("record_type") == "history":
                row = items(record.history.item)
                rows.append({key: value for key, value in row.items() if not key.startswith("_")})
    return rows


def last_step(wandb_dir: Path, run_id: str) -> int:
    return max((int(row["global_step"]) for row in history(wandb_dir, run_id) if "global_step" in row), default=0)


def records(path: Path) -> Iterator[Any]:
    from wandb.proto import wandb_internal_pb2  # wandb's own record schema, for the version that wrote the file

    for data in _pieces_joined(path.read_bytes()):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        yield record


def _pieces_joined(data: bytes) -> Iterator[bytes]:
    if not data.startswith(HEADER):
        return
    position, joined = len(HEADER) + 3, b""  # the file header also holds a magic number and a version
    while position + RECORD_HEADER <= len(data):
        room = BLOCK - position % BLOCK
        if room < RECORD_HEADER:  # a block's tail too short for a record header is padding
            position += room
            continue
        checksum = int.from_bytes(data[position : position + 4], "little")
        length = int.from_bytes(data[position + 4 : position + 6], "little")
        kind = data[position + 6]
        start = position + RECORD_HEADER
        piece = data[start : start + length]
        if len(piece) < length or zlib.crc32(bytes([kind]) + piece) != checksum:
            return  # cut short by a kill: everything before it is whole
        position = start + length
        if kind == WHOLE:
            yield piece
        elif kind == FIRST:
            joined = piece
        elif kind == MIDDLE:
            joined += piece
        elif kind == LAST:
            yield joined + piece
        else:
            return


def items(updates: Any) -> dict[str, Any]:
    """A config or summary record's updates as {key: value}; a nested key is dotted."""
    return {_key(item): json.loads(item.value_json) for item in updates}


def _started(path: Path) -> str:
    """The start time in an attempt folder's name, `[offline-]run-<YYYYmmdd_HHMMSS>-<id>`: it sorts as text."""
    return path.parent.name.removesuffix(path.stem.removeprefix("run")).rpartition("run-")[2]


def _key(item: Any) -> str:
    return item.key or ".".join(item.nested_key)
