"""A project for the library to serve, assembled without Copier from the template's own plain files.

The template's research code (`template/src/{{ package_name }}/`) and configs (`template/configs/`) need no
rendering: they are copied as the package `demo` into a temporary checkout, with jobs/job.sh rendered for that
name. The checkout is a git repository with one commit, as a generated project is. Each test process (each
pytest-xdist worker) builds its own at import, so that module-level constants can name its files.

Importing this module changes only this process's sys.path. The library serves the project, in this process and in
the processes the tests start, while ENVIRONMENT is set: tests/library/conftest.py sets it around the library's
tests only, so that the template's tests, run in the same pytest process by `pytest tests`, start their commands
without it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import samebits.project

TEMPLATE = Path(__file__).resolve().parents[3] / "template"
PACKAGE = "demo"
IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.org"]

PYPROJECT = f"""[project]
name = "{PACKAGE}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["samebits"]
"""


def assemble(root: Path) -> Path:
    shutil.copytree(TEMPLATE / "configs", root / "configs")
    shutil.copytree(TEMPLATE / "src" / "{{ package_name }}", root / "src" / PACKAGE)
    (root / "jobs").mkdir()
    job = (TEMPLATE / "jobs" / "job.sh.jinja").read_text().replace("{{ package_name }}", PACKAGE)
    (root / "jobs" / "job.sh").write_text(job)
    (root / "jobs" / "job.sh").chmod(0o755)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "uv.lock").write_text("version = 1\n")  # hashed into provenance, as a real lock is
    (root / ".gitignore").write_text("runs/\ndata/\n__pycache__/\n")
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main"], cwd=root, check=True)
    subprocess.run(["git", "add", "--all"], cwd=root, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-m", "demo project"], cwd=root, check=True)
    return root


ROOT = assemble(Path(tempfile.mkdtemp(prefix="samebits-demo-")) / "demo")
atexit.register(shutil.rmtree, ROOT.parent, True)
SOURCE = ROOT / "src"
sys.path.insert(0, str(SOURCE))  # the test modules import the project's research code at collection
ENVIRONMENT = {
    "PYTHONPATH": os.pathsep.join(filter(None, [str(SOURCE), os.environ.get("PYTHONPATH")])),
    samebits.project.ENVIRONMENT: PACKAGE,  # what samebits.project.use(PACKAGE) sets
}

# The character-level transformer, cut down to a few seconds: two checkpoints and two evaluations.
SHORT_LM = [
    "experiment=char_transformer",
    "trainer.max_steps=20",
    "trainer.ckpt_every=10",
    "trainer.eval_every=10",
    "sched.warmup_steps=5",
    "model.width=32",
    "model.depth=1",
    "trainer.num_threads=1",
]
