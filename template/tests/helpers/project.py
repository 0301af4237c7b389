"""The package under test, served by the samebits library as its entry points serve it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import samebits.project

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"].replace("-", "_")
samebits.project.use(PACKAGE)  # what the entry points do: the library serves this project
