"""This checkout (the template) and projects generated from it, as users generate them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PACKAGE = "my_experiments"


def copy_template(destination: Path, **answers: Any) -> subprocess.CompletedProcess[str]:
    """Run `copier copy --trust --defaults` as users do, from this checkout's HEAD, in a fresh process.

    Copier includes uncommitted changes of a local template, so this tests the working tree. A fresh process
    also hands the test's environment (git config, PATH) to the post-copy tasks.
    """
    data = [f"--data={key}={value}" for key, value in answers.items()]
    command = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet", "--vcs-ref=HEAD"]
    return subprocess.run([*command, *data, str(ROOT), str(destination)], capture_output=True, text=True)


def generate(destination: Path, **answers: Any) -> Path:
    done = copy_template(destination, **answers)
    assert done.returncode == 0, done.stderr
    return destination


def example_answers(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "examples" / f"{name}.yml").read_text())
