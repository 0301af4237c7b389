"""Every experiment of configs/experiment/ composes with the project's schemas and passes the library's checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from samebits.composition import composed
from samebits.core import checks, naming

from helpers.project import ROOT

assert naming  # registers the run-name resolver

EXPERIMENTS = sorted(path.stem for path in (ROOT / "configs" / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", [None, *EXPERIMENTS])
def test_every_experiment_is_sound(experiment: str | None) -> None:
    cfg = composed([f"experiment={experiment}"] if experiment else [])
    assert checks.problems(cfg) == []
    assert Path(cfg.paths.runs_dir).is_absolute()  # relative to the project, wherever a run is started from
