"""The proof's quick exit ends a process with the status, output and exit handlers of a normal exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ENTRY_POINT = """
import atexit, sys, threading, time
from pathlib import Path
from samebits.core import failpoints

def entry_point():
    atexit.register(lambda: Path("atexit.done").write_text("ran"))
    worker = threading.Thread(target=lambda: (time.sleep(0.3), Path("thread.done").write_text("ran")))
    worker.start()
    print("unflushed output", end="")
    {ending}

failpoints.run_then_exit(entry_point)
Path("after.entry_point").write_text("the process went on")
"""


def run_entry_point(folder: Path, ending: str, quick: bool) -> subprocess.CompletedProcess[str]:
    script = folder / "entry.py"
    script.write_text(textwrap.dedent(ENTRY_POINT).format(ending=ending))
    env = {**os.environ, "REPRODUCIBILITY_QUICK_EXIT": "1" if quick else ""}
    return subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True, text=True, env=env)


@pytest.mark.parametrize(
    ("ending", "status"), [("return", 0), ("raise SystemExit(75)", 75), ("raise SystemExit('gave up')", 1)]
)
@pytest.mark.parametrize("quick", [True, False])
def test_exit_status_output_threads_and_exit_handlers_are_kept(
    tmp_path: Path, ending: str, status: int, quick: bool
) -> None:
    done = run_entry_point(tmp_path, ending, quick)
    assert done.returncode == status, done.stderr
    assert done.stdout == "unflushed output"
    assert ("gave up" in done.stderr) == (status == 1)
    assert (tmp_path / "atexit.done").read_text() == "ran"
    assert (tmp_path / "thread.done").read_text() == "ran"  # a non-daemon thread is waited for
    # Quick, the process ends with the entry point; otherwise the caller's code goes on as usual.
    assert (tmp_path / "after.entry_point").exists() == (not quick and status == 0)


def test_a_crash_still_shows_its_traceback(tmp_path: Path) -> None:
    done = run_entry_point(tmp_path, "raise ValueError('a bug')", quick=True)
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert "ValueError: a bug" in done.stderr
