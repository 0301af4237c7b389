"""A process of the library ends in one place: library code raises typed errors, the entry points turn them into
lines on stderr and an exit code (core/errors.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import samebits
from samebits.core import errors

SOURCE = Path(samebits.__file__).resolve().parent
# Where a process may end: the one exit point, the proof's quick exit, the proof's torchrun (its workers end with
# their run's code, as torchrun's do), and the scripts nox runs by path.
ENDS_PROCESSES = {"core/errors.py", "core/failpoints.py", "core/deps.py", "core/template_version.py",
                  "launch/local_job.py", "proof/forked_torchrun.py"}  # fmt: skip


def process_ends(path: Path) -> list[str]:
    """`raise SystemExit`, `sys.exit(...)` and `os._exit(...)` in `path`, as `file:line`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        raised = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(raised, ast.Call):
            raised = raised.func
        called = node.func if isinstance(node, ast.Call) else None
        module = called.value.id if isinstance(called, ast.Attribute) and isinstance(called.value, ast.Name) else ""
        if (isinstance(raised, ast.Name) and raised.id == "SystemExit") or (
            isinstance(called, ast.Attribute) and f"{module}.{called.attr}" in ("sys.exit", "os._exit")
        ):
            found.append(f"{path.relative_to(SOURCE)}:{node.lineno}")
    return found


def test_library_code_raises_errors_and_never_ends_the_process() -> None:
    found = [end for path in sorted(SOURCE.rglob("*.py")) if str(path.relative_to(SOURCE)) not in ENDS_PROCESSES
             for end in process_ends(path)]  # fmt: skip
    assert not found, f"raise a typed error from core/errors.py instead (the entry points end the process): {found}"


@pytest.mark.parametrize(
    ("error", "code", "printed"),
    [
        (errors.UsageError("a mistake", "another"), 2, "error: a mistake\nerror: another\n"),
        (errors.RunLocked("runs/x is in use"), 73, "error: runs/x is in use\n"),
        (errors.StorageError("the disk is full"), 74, "error: the disk is full\n"),
        (errors.Interrupted("nothing was saved"), 130, "interrupted: nothing was saved\n"),
        (errors.Stopped(exit_code=0), 0, ""),  # a pause: the log said why
        (errors.RunFailed(), 1, ""),  # another rank: rank 0 says why
    ],
)
def test_an_error_becomes_its_lines_and_its_code_at_the_entry_point(
    error: errors.Exit, code: int, printed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended, errors.exit_on_error():
        raise error
    assert ended.value.code == code
    assert capsys.readouterr() == ("", printed)


def test_other_exceptions_pass_the_exit_point_whole() -> None:
    with pytest.raises(KeyError), errors.exit_on_error():
        raise KeyError("a bug keeps its traceback")
