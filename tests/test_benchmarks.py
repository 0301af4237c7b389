"""`nox -s bench -- --quick` runs every benchmark with tiny counts, as the full run does, and reports each one.

It checks the harness, never the speed: the figures of a --quick run mean nothing, and BENCHMARKS.md (the full run,
made by hand on a 2-core machine) is left as it is. It measures the session's default project (`--project`) instead
of generating one, and leaves it with its venv and its proof's venv made, as later tests would make them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers.generation import ROOT

pytestmark = pytest.mark.slow

SECTIONS = [
    "Loop overhead: digits MLP",
    "Loop overhead: char transformer",
    "Checkpoint save and load",
    "Resume",
    "Launcher at scale",
    "Reproducibility proof",
    "Template operations",
]
CONTENDERS = ["ours", "bare", "lightning minimal", "lightning + CSV, checkpoints, bar"]


def test_quick_bench_runs_every_benchmark_and_reports_every_goal_with_a_figure(default_project: Path) -> None:
    committed = (ROOT / "BENCHMARKS.md").read_bytes() if (ROOT / "BENCHMARKS.md").exists() else None
    bench = ["nox", "--non-interactive", "-s", "bench", "--", "--quick", "--project", str(default_project)]
    done = subprocess.run(bench, cwd=ROOT, capture_output=True, text=True)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    report = output[output.index("# Benchmarks") :]
    assert "--quick: tiny counts that check the harness" in report
    for title in SECTIONS:
        assert f"\n## {title}\n" in report, title
    for section in ("digits MLP", "char transformer"):
        table = report[report.index(f"## Loop overhead: {section}") :].split("\n## ")[0]
        rows = [line.split(" | ")[0].strip("| ") for line in table.splitlines() if line.startswith("| ")]
        assert rows[1:] == CONTENDERS, table
    goals = report[report.index("## Goals") :].split("\n## ")[0]
    measured = re.findall(r"^\| (.+?) \| (.+?) \| (.+?) \| (yes|\*\*no\*\*) \|$", goals, flags=re.MULTILINE)
    assert len(measured) == 2 * 2 + 4 + 1 + 1 + 1, goals  # loop ×2 (speed, start-up), checkpoint 2 sizes × 2, ...
    assert all(re.search(r"\d", figure) for _, _, figure, _ in measured), goals
    after = (ROOT / "BENCHMARKS.md").read_bytes() if (ROOT / "BENCHMARKS.md").exists() else None
    assert after == committed, "a --quick run must not overwrite the committed BENCHMARKS.md"
