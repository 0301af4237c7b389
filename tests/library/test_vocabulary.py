"""Each word of the library is defined once: where a run stands (core/states.py) and the files of a run folder
(core/run_files.py); every module uses those."""

from __future__ import annotations

import ast
from pathlib import Path

import samebits
from samebits.core import run_files, states

SOURCE = Path(samebits.__file__).resolve().parent


def test_every_attempt_state_and_group_is_a_run_state() -> None:
    assert set(states.ATTEMPT_STATES) <= set(states.RUN_STATES)
    assert set(states.RUN_STATES) >= states.RESUMABLE | states.BUSY | states.SETTLED | states.EXPLAINED
    assert not states.RESUMABLE & states.BUSY


def test_no_module_lists_run_states_of_its_own() -> None:
    """A tuple, list or set of two or more state names outside core/states.py is a second definition."""
    words = set(states.RUN_STATES)
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path == SOURCE / "core" / "states.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                named = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in words]
                if len(named) >= 2:
                    found.append(f"{path.relative_to(SOURCE)}:{node.lineno} {named}")
    assert not found, f"use the groups of core/states.py: {found}"


def test_only_run_files_names_the_files_of_a_run_folder() -> None:
    names = {value for key, value in vars(run_files).items() if key.isupper() and isinstance(value, str)}
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path == SOURCE / "core" / "run_files.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(SOURCE)}:{node.lineno} {node.value!r}")
    assert not found, f"name the file through core/run_files.py's RunFiles: {found}"


def test_only_locks_takes_a_lock() -> None:
    takers = [path.relative_to(SOURCE) for path in sorted(SOURCE.rglob("*.py")) if "fcntl.flock(" in path.read_text()]
    assert takers == [Path("core/locks.py")]


def test_only_git_runs_git() -> None:
    """Besides core/git.py, only the two scripts that nox runs by path, which can import nothing, run git."""
    runners = sorted(
        str(path.relative_to(SOURCE)) for path in SOURCE.rglob("*.py") if '["git",' in path.read_text().replace(" ", "")
    )
    assert runners == ["core/deps.py", "core/git.py", "core/template_version.py"]
