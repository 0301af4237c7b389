"""The checkouts jobs/job.sh keeps, one per commit, each with a full .venv: list them, prune the least recently used.

Under `<cache>/checkouts/`, job.sh keeps `<sha>/` with `<sha>.lock` (held while preparing), `<sha>.ready`
(prepared) and `<sha>.used` (touched when a job starts, and held with a shared lock until the job ends). Pruning
removes a checkout only under an exclusive lock on `<sha>.used`, so it never removes one that a job runs from.
The bare mirrors (`<cache>/<hash>.git`) are small and kept.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..core.locks import try_exclusive
from ..project import user_cache

SHA = re.compile(r"[0-9a-f]{7,64}")
MARKERS = (".ready", ".lock", ".used")  # removed in this order: `.used`, whose lock guards the rest, last


def cache_dir(package: str, env: Mapping[str, str] = os.environ) -> Path:
    """The folder job.sh uses: $JOB_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/<package>/jobs (empty = unset)."""
    return Path(env.get("JOB_CACHE") or user_cache(package, env) / "jobs").resolve()


@dataclass(frozen=True)
class Checkout:
    path: Path  # <cache>/checkouts/<sha>; it may be missing where a preparation failed early
    last_used: float  # seconds since the epoch: the latest time of <sha>.used, <sha>.ready or the folder
    ready: bool

    @property
    def sha(self) -> str:
        return self.path.name

    def marker(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)


def checkouts(cache: Path) -> list[Checkout]:
    """Every checkout in the cache, with the leftovers of failed preparations, most recently used first."""
    folder = cache / "checkouts"
    names = {entry.name.partition(".")[0] for entry in folder.iterdir()} if folder.is_dir() else set()
    found = []
    for sha in filter(SHA.fullmatch, names):
        paths = [folder / sha, *(folder / f"{sha}{suffix}" for suffix in (".used", ".ready", ".lock"))]
        times = [path.lstat().st_mtime for path in paths if path.exists()]
        found.append(Checkout(folder / sha, max(times, default=0.0), (folder / f"{sha}.ready").exists()))
    return sorted(found, key=lambda checkout: (checkout.last_used, checkout.sha), reverse=True)


@contextmanager
def unused(checkout: Checkout, create: bool) -> Iterator[bool]:
    """Hold an exclusive lock on `<sha>.used` while no job holds it: yields False while one does.

    `create` makes the marker if it is missing, so that a job starting meanwhile waits for the lock; a job
    that locked a marker which was removed meanwhile locks the new one (see job.sh), and so does this.
    """
    marker = checkout.marker(".used")
    try:
        fd = os.open(marker, os.O_RDONLY | (os.O_CREAT if create else 0), 0o644)
    except FileNotFoundError:  # never used by a job since job.sh kept this marker: no job holds it
        yield True
        return
    try:
        if not try_exclusive(fd):
            yield False
            return
        try:
            current = os.path.samestat(os.fstat(fd), os.stat(marker))
        except FileNotFoundError:  # another prune removed it: leave this checkout to that one
            current = False
        yield current
    finally:
        os.close(fd)  # after the marker's removal, so a waiting job finds it gone and locks a new one


def disk_usage(checkout: Checkout) -> int:
    """Bytes on disk of the checkout and its markers, each file once (files hard-linked from uv's cache count)."""
    seen, total = set(), 0
    paths = [checkout.path, *(checkout.marker(suffix) for suffix in MARKERS)]
    for root, folders, files in os.walk(checkout.path):
        paths += [os.path.join(root, name) for name in (*folders, *files)]
    for path in paths:
        try:
            stat = os.lstat(path)
        except FileNotFoundError:
            continue
        if (stat.st_dev, stat.st_ino) not in seen:
            seen.add((stat.st_dev, stat.st_ino))
            total += stat.st_blocks * 512
    return total


def remove(checkout: Checkout) -> None:
    """Remove the checkout and its markers; `.ready` goes first, so a half-removed checkout is never ready."""
    checkout.marker(".ready").unlink(missing_ok=True)
    if checkout.path.exists():
        shutil.rmtree(checkout.path)
    for suffix in MARKERS[1:]:
        checkout.marker(suffix).unlink(missing_ok=True)


def prune(cache: Path, keep: int, dry_run: bool = False) -> list[str]:
    """Keep the `keep` most recently used prepared checkouts; remove the others that no job runs from.

    Returns one line per checkout removed (or that would be, with `dry_run`) or skipped, then a summary.
    """
    found = checkouts(cache)
    kept = {checkout.sha for checkout in [checkout for checkout in found if checkout.ready][:keep]}
    if len(kept) == len(found):
        return [f"nothing to prune: {len(found)} checkout(s) in {cache}, --keep {keep}"]
    lines, freed, verb = [], 0, "would remove" if dry_run else "removed"
    for checkout in (checkout for checkout in found if checkout.sha not in kept):
        with unused(checkout, create=not dry_run) as free:
            if not free:
                lines.append(f"skipped {checkout.sha}: a running job uses it")
                continue
            size = disk_usage(checkout)
            if not dry_run:
                remove(checkout)
        freed += size
        state = "" if checkout.ready else ", never prepared fully"
        lines.append(f"{verb} {checkout.sha} ({human(size)}, last used {when(checkout.last_used)}{state})")
    total = f"{'would free' if dry_run else 'freed'} {human(freed)}"
    return [*lines, f"kept the {len(kept)} most recently used checkout(s) in {cache}; {total}"]


def listing(cache: Path) -> list[str]:
    """One line per checkout, most recently used first: SHA, last use, size on disk, state."""
    lines = []
    for checkout in checkouts(cache):
        with unused(checkout, create=False) as free:
            state = ("ready" if checkout.ready else "incomplete") if free else "in use"
        lines.append(f"{checkout.sha}  {when(checkout.last_used)}  {human(disk_usage(checkout)):>10}  {state}")
    return lines or [f"no checkouts in {cache}"]


def human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M") if timestamp else "never"
