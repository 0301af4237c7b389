"""Every example project builds as its user would, trains briefly and passes its reproducibility proof, through
the template's own `nox -s examples` (examples/README.md), with `--quick`: proofs 1 and 2 (same config twice, and
a mid-epoch resume). The full proof of each task runs on the default project (test_proof.py). The
lab_models example pins a library as a git submodule (a local repository made from examples/lab_models/library)
and trains a model that comes from it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.generation import ROOT

pytestmark = pytest.mark.slow

EXAMPLE_NAMES = sorted(path.stem for path in (ROOT / "examples").glob("*.yml"))


def test_every_answers_file_is_an_example_that_nox_runs() -> None:
    noxfile = (ROOT / "noxfile.py").read_text()
    assert EXAMPLE_NAMES == ["char_lm", "digits", "lab_models"]
    assert all(f'"{name}": (' in noxfile for name in EXAMPLE_NAMES)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_trains_and_passes_its_proof(name: str) -> None:
    done = subprocess.run(
        ["nox", "--non-interactive", "-s", "examples", "--", "--quick", name], cwd=ROOT, capture_output=True, text=True
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert re.search(r"^2 of 2 identical in \d+ s$", output, flags=re.MULTILINE), output[-6000:]
    assert f"{name}: trained, and its proof passed" in output


def test_lab_models_example_pins_its_library_and_a_model_config_uses_it(tmp_path: Path) -> None:
    project = tmp_path / "lab"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "build.py"), "lab_models", str(project)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "lab_models.ResidualMLP" in (project / "configs" / "model" / "lab_residual_mlp.yaml").read_text()
    submodule = subprocess.run(["git", "submodule", "status"], cwd=project, capture_output=True, text=True).stdout
    assert "external/lab-models (v0.1.0)" in submodule
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True).stdout == ""
