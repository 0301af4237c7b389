"""The library keeps its design: machinery, launch, trackers, analysis and proofs apart, small modules, no import
cycles, no research code, and one loop that never names a task. And the tests keep theirs: what they share is in
a helpers folder (tests/helpers/, tests/library/helpers/, a project's tests/helpers/), never in another test module."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
import samebits

SOURCE = Path(samebits.__file__).resolve().parent
MODULES = sorted(SOURCE.rglob("*.py"))
MAX_LINES = 300
REPOSITORY = SOURCE.parents[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The package's own modules that `path` imports (relative or absolute), at any depth of the file."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [f"{target}.{alias.name}" for alias in node.names]
            found |= {name if name in NAMES else target for name in names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name in NAMES and name != module_name(path)}


NAMES = {module_name(path) for path in MODULES}
GRAPH = {module_name(path): imports(path) for path in MODULES}


def test_the_folders_name_the_design() -> None:
    folders = {path.name for path in SOURCE.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == {"analysis", "core", "launch", "proof", "tracking"}


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_LINES


def test_no_import_cycles() -> None:
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        assert name not in visiting, f"import cycle: {' -> '.join([*visiting[visiting.index(name) :], name])}"
        if name in done:
            return
        visiting.append(name)
        for imported in sorted(GRAPH[name]):
            visit(imported)
        visiting.pop()
        done.add(name)

    for name in sorted(GRAPH):
        visit(name)


def test_ownership_boundaries() -> None:
    def within(name: str, folder: str) -> bool:
        return name.startswith(f"samebits.{folder}")

    for name, imported in GRAPH.items():
        if within(name, "core"):  # the machinery never reaches up into the proof, launching, analysis or trackers
            upper = ("proof", "launch", "analysis", "tracking")
            assert not {i for i in imported if any(within(i, folder) for folder in upper)}, name
    # Only the entry point starts the loop (the console command runs the project's train module, which calls it).
    assert {name for name, imported in GRAPH.items() if "samebits.train" in imported} == {"samebits.entry"}


def test_the_loop_never_names_a_task() -> None:
    """train.py reaches data, model and objective only through the config: no dataset, label or metric name."""
    tree = ast.parse((SOURCE / "train.py").read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree) if _has_docstring(node)}
    words = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    words |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    words |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
              and id(n) not in docstrings}  # fmt: skip
    tokens = set(re.findall(r"[a-z]+", " ".join(words).lower()))
    assert tokens.isdisjoint(TASK_WORDS), sorted(tokens & TASK_WORDS)


TASK_WORDS = {"digit", "digits", "pydoc", "char", "chars", "label", "labels", "acc", "accuracy", "bpc"}
TASK_WORDS |= {"entropy", "token", "tokens", "logits", "vocab", "classification", "language"}


# This repository's tests and the generated project's (template/tests/): test modules are test_*.py and conftest.py.
REPOSITORY = Path(__file__).resolve().parents[2]
TEST_TREES = [REPOSITORY / "tests", REPOSITORY / "template" / "tests"]
TEST_SOURCES = sorted(path for tree in TEST_TREES for path in tree.rglob("*.py"))
TEST_MODULES = {path.stem for path in TEST_SOURCES if path.name == "conftest.py" or path.name.startswith("test_")}


@pytest.mark.parametrize("path", TEST_SOURCES, ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_no_test_imports_another_test_module(path: Path) -> None:
    """Test modules, conftest.py included, import what they share from helpers/, never from each other (nor do the
    helpers): a test imported into another module runs there again, and conftest.py is pytest's to load."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [[*(node.module or "").split("."), alias.name] for alias in node.names]
        else:
            continue
        found |= {".".join(filter(None, parts)) for parts in names if TEST_MODULES.intersection(parts)}
    assert not found, f"import these from a helpers module instead: {sorted(found)}"


def _has_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and bool(node.body)
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    )


# A measured figure: a number and a unit of time, size or rate ("145 ms", "0.03-0.05 ms", "200 MB", "5x faster").
# Such figures go stale in a comment; they belong in BENCHMARKS.md or a record under docs/decisions/.
NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s*[-–]\s*\d[\d,]*(?:\.\d+)?)?"
UNIT = r"(?:[mµu]?s|ns|secs?|seconds?|mins?|minutes?|h|hours?|[KMGT]i?B|kB|it/s|steps?/s|samples/s)"
COMPARED = r"(?:[x×%]|\s*times)\s*(?:faster|slower)\b"
MEASURE = re.compile(rf"{NUMBER}\s?(?:{UNIT}(?![\w/])|{COMPARED})")
# (file relative to the repository, figure): why it is not a measurement.
NOT_MEASURED = {
    ("src/samebits/tracking/wandb_files.py", "32 KiB"): "LevelDB's log format: its block size",
    ("src/samebits/tracking/mlflow_store.py", "20 s"): "MLflow's configured busy_timeout, not a time observed",
}


def _comments(path: Path) -> list[tuple[int, str]]:
    """Each `#` comment and each docstring line of a Python file, with its line number."""
    text = path.read_text()
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if _has_docstring(node):
            constant = node.body[0].value  # type: ignore[attr-defined]
            if isinstance(constant.value, str):
                found += [(constant.lineno + k, line) for k, line in enumerate(constant.value.splitlines())]
    return found


def _measurements(paths: list[Path]) -> list[tuple[str, int, str]]:
    return [
        (str(path.relative_to(REPOSITORY)), number, match.group())
        for path in paths
        for number, line in _comments(path)
        for match in MEASURE.finditer(line)
    ]


SCANNED = sorted([*MODULES, *(REPOSITORY / "template" / "src").rglob("*.py")])


def test_comments_quote_no_measurements() -> None:
    """A figure measured on some machine ("200 MB: 145 ms", "5x faster") goes stale in a comment: it belongs in
    BENCHMARKS.md, or with its reasons in docs/decisions/, and the comment keeps the why."""
    found = _measurements(SCANNED)
    quoted = [f"{file}:{line}: {figure!r}" for file, line, figure in found if (file, figure) not in NOT_MEASURED]
    assert not quoted, "measured figures in comments (move them to BENCHMARKS.md or docs/decisions/):\n" + "\n".join(
        quoted
    )
    stale = set(NOT_MEASURED) - {(file, figure) for file, _, figure in found}
    assert not stale, f"allowed figures no longer in the code: {sorted(stale)}"


def test_the_measurement_pattern() -> None:
    for figure in ["145 ms", "0.03-0.05 ms", "200 MB", "1.3 s", "10 s", "5x faster", "25 minutes", "3 GiB", "9 it/s"]:
        assert MEASURE.search(f"took {figure} here"), figure
    for text in ["exit code 75", "every HEARTBEAT_S seconds", "a 7-byte header", "8x8 digits", "1,797 images", "v1.2"]:
        assert not MEASURE.search(text), text
