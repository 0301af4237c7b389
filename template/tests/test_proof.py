"""The quick proof, through the library: the same config twice gives the same bits, and so does a resume."""

from __future__ import annotations

import re
import subprocess
import sys

from helpers.project import PACKAGE, ROOT


def test_the_quick_proof_passes() -> None:
    command = [sys.executable, "-m", PACKAGE, "proof", "--only", "1,2"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^(\d+) of \1 identical", done.stdout, flags=re.MULTILINE), done.stdout[-3000:]
