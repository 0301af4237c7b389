"""The checksum that proves a checkpoint file whole before it is loaded, named in each manifest entry.

A checksum is written as `<algorithm>:<hex digest>`. Checkpoints are checked with xxHash's XXH3-128: a resume reads
the whole file before loading it, and XXH3 reads as fast as memory does, so the check adds little to the load
(docs/decisions/0012-checkpoint-checksum-xxh3.md). It guards against damage (a torn write, a flipped bit, a file
cut short), not against someone who forges a file: nothing here is a signature.

Manifests written by samebits 0.3 and before hold a bare sha256 hex digest: such entries are still checked,
with sha256, so a run resumes from a checkpoint an older version of the library made.

`params_sha256` and `rng_sha256`, the proof's currency, are not file checksums and stay sha256 (core/hashing.py).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xxhash

ALGORITHM = "xxh3_128"
# Every algorithm a manifest entry may name: what this version writes, and what samebits 0.3 and before wrote.
HASHERS: dict[str, Callable[[], Any]] = {ALGORITHM: xxhash.xxh3_128, "sha256": hashlib.sha256}


def of_descriptor(descriptor: int) -> str:
    """The checksum of an open file (which this closes), read through a memory map: no copy into a buffer, and one
    call, which lets go of the GIL. For a file that no one else writes (a temporary of write_atomic, say): one cut
    short while mapped would end the process (SIGBUS). Deleting it does not."""
    return f"{ALGORITHM}:{_digest(HASHERS[ALGORITHM](), descriptor)}"


def of_file(path: Path) -> str:
    return of_descriptor(os.open(path, os.O_RDONLY))


def algorithm(recorded: str) -> str:
    """The algorithm a manifest entry names: a bare digest is the sha256 of samebits 0.3 and before."""
    named, _, _ = recorded.rpartition(":")
    return named or "sha256"


def known(recorded: str) -> bool:
    return algorithm(recorded) in HASHERS


def matches(path: Path, recorded: str) -> bool:
    """Whether the file at `path` has the checksum a manifest recorded for it, in the algorithm it names; an
    algorithm this version does not know is never taken for a match."""
    hasher = HASHERS.get(algorithm(recorded))
    return hasher is not None and _digest(hasher(), os.open(path, os.O_RDONLY)) == recorded.rpartition(":")[2]


def _digest(hasher: Any, descriptor: int) -> str:
    try:
        if os.fstat(descriptor).st_size:  # an empty file cannot be mapped
            with mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ) as mapped:
                hasher.update(mapped)
    finally:
        os.close(descriptor)
    digest: str = hasher.hexdigest()
    return digest
