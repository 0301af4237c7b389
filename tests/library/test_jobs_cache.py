"""`jobs-cache prune` keeps the most recently used checkouts of job.sh and never removes one a job runs from."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.project import PACKAGE, ROOT

jobs_cache = import_module("samebits.launch.jobs_cache")
cli = import_module("samebits.cli")

DAY = 24 * 3600


def make_checkout(cache: Path, sha: str, days_ago: float, ready: bool = True, used: bool = True) -> Path:
    """A fake checkout as job.sh leaves it: the folder with a 'venv' file, and its markers, last used then."""
    folder = cache / "checkouts"
    (folder / sha / ".venv").mkdir(parents=True)
    (folder / sha / ".venv" / "lib.so").write_bytes(b"x" * 100_000)
    then = time.time() - days_ago * DAY
    for suffix, present in ((".lock", True), (".ready", ready), (".used", used)):
        if present:
            (folder / f"{sha}{suffix}").touch()
            os.utime(folder / f"{sha}{suffix}", (then, then))
    os.utime(folder / sha, (then, then))
    return folder / sha


def leftovers(cache: Path) -> set[str]:
    return {path.name for path in (cache / "checkouts").iterdir()}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """Four prepared checkouts used 1 to 4 days ago (a, b, c, d), one never used by the current job.sh (e),
    and one whose preparation failed (f)."""
    cache = tmp_path / "jobs"
    for days_ago, sha in enumerate(["a" * 40, "b" * 40, "c" * 40, "d" * 40], start=1):
        make_checkout(cache, sha, days_ago)
    make_checkout(cache, "e" * 40, 0.5, used=False)
    make_checkout(cache, "f" * 40, 0.1, ready=False)
    (cache / "0123456789abcdef.git").mkdir()  # a mirror: never pruned
    return cache


@pytest.fixture
def held(cache: Path) -> Iterator[Path]:
    """Checkout c, with a shared lock on its .used marker held by another process, as a running job holds it."""
    marker = cache / "checkouts" / f"{'c' * 40}.used"
    code = "import fcntl, sys; f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_SH); print('locked', flush=True); "
    code += "sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", code, str(marker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    yield marker.with_suffix("")
    holder.communicate(timeout=10)


def test_prune_keeps_the_most_recently_used_and_removes_the_rest_with_their_markers(cache: Path) -> None:
    lines = jobs_cache.prune(cache, keep=2)
    kept = {f"{sha * 40}{suffix}" for sha in "ea" for suffix in ("", ".lock", ".ready", ".used")}
    assert leftovers(cache) == kept - {f"{'e' * 40}.used"}
    assert (cache / "0123456789abcdef.git").is_dir()
    assert [line.split(" (")[0] for line in lines[:-1]] == [f"removed {sha * 40}" for sha in "fbcd"]
    assert "never prepared fully" in lines[0]
    assert lines[-1].startswith(f"kept the 2 most recently used checkout(s) in {cache}; freed ")
    assert lines[-1].endswith(" KiB") and float(lines[-1].split()[-2]) > 390  # four files of 100 kB, at least


def test_keep_zero_removes_every_checkout_and_a_large_keep_removes_only_failed_ones(cache: Path) -> None:
    jobs_cache.prune(cache, keep=10)
    assert not (cache / "checkouts" / ("f" * 40)).exists()
    assert len(leftovers(cache)) == 5 * 4 - 1  # e has no .used marker
    assert jobs_cache.prune(cache, keep=10) == [f"nothing to prune: 5 checkout(s) in {cache}, --keep 10"]
    jobs_cache.prune(cache, keep=0)
    assert leftovers(cache) == set()


def test_a_checkout_a_running_job_holds_survives(cache: Path, held: Path) -> None:
    lines = jobs_cache.prune(cache, keep=0)
    assert f"skipped {held.name}: a running job uses it" in lines
    assert leftovers(cache) == {held.name, *(f"{held.name}{suffix}" for suffix in (".lock", ".ready", ".used"))}
    assert (held / ".venv" / "lib.so").is_file()
    assert f"{held.name}  " in jobs_cache.listing(cache)[0] and jobs_cache.listing(cache)[0].endswith("in use")


def test_dry_run_removes_nothing(cache: Path, held: Path) -> None:
    before = {path: path.stat().st_mtime for path in (cache / "checkouts").iterdir()}
    lines = jobs_cache.prune(cache, keep=1, dry_run=True)
    assert {path: path.stat().st_mtime for path in (cache / "checkouts").iterdir()} == before
    assert [line.split(" (")[0] for line in lines[:-1]] == [
        f"would remove {'f' * 40}",
        f"would remove {'a' * 40}",
        f"would remove {'b' * 40}",
        f"skipped {held.name}: a running job uses it",
        f"would remove {'d' * 40}",
    ]
    assert " would free " in lines[-1]


def test_list_shows_each_checkout_most_recently_used_first(cache: Path) -> None:
    lines = jobs_cache.listing(cache)
    assert [line.split()[0] for line in lines] == [sha * 40 for sha in "feabcd"]
    assert [line.split()[-1] for line in lines] == ["incomplete", *["ready"] * 5]
    assert leftovers(cache) == {path.name for path in (cache / "checkouts").iterdir()}  # nothing created


@pytest.mark.parametrize(
    "env",
    [
        {"HOME": "/home/someone"},
        {"HOME": "/home/someone", "XDG_CACHE_HOME": "/xdg"},
        {"HOME": "/home/someone", "XDG_CACHE_HOME": "", "JOB_CACHE": ""},
        {"HOME": "/home/someone", "XDG_CACHE_HOME": "/xdg", "JOB_CACHE": "relative/cache"},
    ],
)
def test_the_cache_folder_is_the_one_job_sh_computes(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (line,) = [line for line in (ROOT / "jobs" / "job.sh").read_text().splitlines() if line.startswith("cache=")]
    script = f'{line}\nprintf %s "$cache"'
    shell = subprocess.run(["bash", "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    monkeypatch.chdir(tmp_path)
    assert str(jobs_cache.cache_dir(PACKAGE, env)) == shell.stdout


def test_the_command_prunes_the_jobs_cache_and_a_missing_cache_is_nothing_to_prune(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOB_CACHE", str(tmp_path / "missing"))
    cli.main(PACKAGE, ["jobs-cache", "prune"])
    assert capsys.readouterr().out.startswith("nothing to prune: 0 checkout(s) in ")
    monkeypatch.setenv("JOB_CACHE", str(cache))
    cli.main(PACKAGE, ["jobs-cache", "prune", "--keep", "5", "--dry-run"])
    assert capsys.readouterr().out.startswith(f"would remove {'f' * 40} (")
    cli.main(PACKAGE, ["jobs-cache", "prune"])
    assert capsys.readouterr().out.splitlines()[-1].startswith("kept the 5 most recently used checkout(s)")
    cli.main(PACKAGE, ["jobs-cache", "list"])
    assert len(capsys.readouterr().out.splitlines()) == 5


def test_a_negative_keep_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(PACKAGE, ["jobs-cache", "prune", "--keep", "-1"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "error: --keep must be 0 or more, not -1\n"
