"""The package holds the project's own code: entry points that hand it to samebits, and research/ in small
modules, never the loop or the machinery, which are read from the pinned library (external/samebits)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers.project import PACKAGE, ROOT

SOURCE = ROOT / "src" / PACKAGE
MODULES = sorted(SOURCE.rglob("*.py"))
MAX_LINES = 300
ENTRY_POINTS = {"__init__.py", "__main__.py", "cli.py", "train.py"}


def test_the_package_holds_entry_points_and_research_only() -> None:
    top = {path.name for path in SOURCE.iterdir() if path.name != "__pycache__"}
    assert top - ENTRY_POINTS <= {"research"}, sorted(top - ENTRY_POINTS)
    kinds = {path.name for path in (SOURCE / "research").iterdir() if path.is_dir()}
    assert kinds >= {"models", "datasets", "objectives"}


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_LINES


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("path", sorted((SOURCE / "research").rglob("*.py")), ids=lambda path: path.name)
def test_research_code_never_reaches_into_the_loop_the_proof_or_the_launcher(path: Path) -> None:
    forbidden = ("samebits.train", "samebits.proof", "samebits.launch", "samebits.tracking")
    assert not {name for name in imported(path) if name.startswith(forbidden)}
