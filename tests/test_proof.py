"""The generated project's own reproducibility proof passes, through the pinned library (`nox -s reproducibility`).
The second task, the trainer switches and the planted bugs are proved in the library's tests (tests/library/).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.commands import run

pytestmark = pytest.mark.slow

ALL_PROOFS = {"1", "2", "3", "4", "5", "6", "7", "8"}


def prove(project: Path, *args: str, expect: int) -> dict[str, str]:
    """Run the project's `nox -s reproducibility -- args`; return each table row's label and result."""
    done = run(project, "nox", "--non-interactive", "-s", "reproducibility", "--", *args, expect=expect)
    rows = re.findall(r"^(\d .+?)\s{2,}\S+\s+\S+\s+(identical|DIFFERENT)\b", done.stdout, flags=re.MULTILINE)
    assert rows, done.stdout
    assert "ERROR: " not in done.stdout, done.stdout  # a chain that crashed proves nothing, either way
    return dict(rows)


def test_generated_reproducibility_proof_passes(default_project: Path) -> None:
    rows = prove(default_project, expect=0)
    assert {label[0] for label in rows} == ALL_PROOFS
    assert set(rows.values()) == {"identical"}, rows
