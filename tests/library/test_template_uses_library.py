"""What a generated project's code and the benchmarks take from the library exists in it.

A project's own tests run only through a generated project, in one slow test; a name the library renamed or
removed would otherwise be found there, or by a user at their next `copier update`. This reads every Python file
of template/ and benchmarks/ (Jinja tags blanked), and checks each `from samebits... import NAME` and each
`module.NAME` used on an imported library module against the library as installed here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
JINJA = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\}", re.DOTALL)
SOURCES = sorted(
    path
    for folder in ("template", "benchmarks")
    for pattern in ("*.py", "*.py.jinja")
    for path in (REPO / folder).rglob(pattern)
)


def _missing_names(tree: ast.Module) -> list[str]:
    modules: dict[str, ModuleType] = {}
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "samebits":
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if value is None:
                    try:
                        value = importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        missing.append(f"{node.module}.{alias.name}")
                        continue
                if isinstance(value, ModuleType):
                    modules[alias.asname or alias.name] = value
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            module = modules[node.value.id]
            if not hasattr(module, node.attr):
                missing.append(f"{module.__name__}.{node.attr}")
    return missing


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: str(path.relative_to(REPO)))
def test_names_taken_from_the_library_exist(source: Path) -> None:
    tree = ast.parse(JINJA.sub("x", source.read_text()))
    assert _missing_names(tree) == []


def test_the_check_finds_a_removed_name() -> None:
    tree = ast.parse("from samebits.core import sweep\nfrom samebits.core.sweep import points, gone\nsweep.absent()\n")
    assert _missing_names(tree) == ["samebits.core.sweep.gone", "samebits.core.sweep.absent"]
