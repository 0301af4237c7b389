"""Generation across answer sets: the right files, the answers in place, lint-clean, one commit, a valid lock."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.generation import DEFAULT_PACKAGE, example_answers, generate
from helpers.git import git

COMMON_FILES = {
    ".copier-answers.yml",
    ".dockerignore",
    ".gitignore",
    ".pre-commit-config.yaml",
    ".python-version",
    ".secrets.baseline",
    "Dockerfile",
    "LICENSE",
    "README.md",
    "configs/data/digits.yaml",
    "configs/data/pydoc_text.yaml",
    "configs/experiment/char_transformer.yaml",
    "configs/experiment/wide_mlp.yaml",
    "configs/hydra/default.yaml",
    "configs/launcher/slurm.yaml",
    "configs/logger/default.yaml",
    "configs/logger/jsonl.yaml",
    "configs/logger/mlflow.yaml",
    "configs/logger/wandb.yaml",
    "configs/model/char_transformer.yaml",
    "configs/model/mlp.yaml",
    "configs/objective/classification.yaml",
    "configs/objective/language_modeling.yaml",
    "configs/optim/adamw.yaml",
    "configs/optim/sgd.yaml",
    "configs/paths/default.yaml",
    "configs/sched/constant.yaml",
    "configs/search/digits.yaml",
    "configs/sched/warmup_cosine.yaml",
    "configs/tags.yaml",
    "configs/train.yaml",
    "configs/trainer/default.yaml",
    "configs/trainer/gpu.yaml",
    ".gitmodules",
    "external/README.md",
    "external/samebits",
    "jobs/job.sh",
    "noxfile.py",
    "pyproject.toml",
    "tests/conftest.py",
    "tests/helpers/__init__.py",
    "tests/helpers/project.py",
    "tests/helpers/runs.py",
    "tests/test_datasets.py",
    "tests/test_experiments.py",
    "tests/test_layout.py",
    "tests/test_models.py",
    "tests/test_objectives.py",
    "tests/test_proof.py",
    "tests/test_sampling.py",
    "uv.lock",
}
# Relative to src/<package>/: the entry points that hand the project to the samebits library, and research/ (the
# user's code). The loop and the machinery are the library's, in the submodule external/samebits.
PACKAGE_MODULES = {
    "__init__.py",
    "__main__.py",
    "cli.py",
    "train.py",
    "research/__init__.py",
    "research/datasets/__init__.py",
    "research/datasets/char_text.py",
    "research/datasets/digits.py",
    "research/datasets/pydoc_topics.py",
    "research/models/__init__.py",
    "research/models/char_transformer.py",
    "research/models/mlp.py",
    "research/objectives/__init__.py",
    "research/objectives/classification.py",
    "research/objectives/language_modeling.py",
    "research/sampling.py",
    "research/schedules.py",
    "research/schemas.py",
}

ANSWER_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "example": example_answers("digits"),
    "python312": {
        "project_name": "Vision Ablations",
        "package_name": "vision_ablations",
        "description": 'Ablations with "quotes" and a backslash \\ in the description',
        "author_name": "Ada Lovelace",
        "author_email": "ada@example.org",
        "python_version": "3.12",
        "license": "Apache-2.0",
    },
    "python313": {"project_name": "lm-scaling 2", "python_version": "3.13", "license": "Proprietary"},
}
EXPECTED = {
    "defaults": {"package": DEFAULT_PACKAGE, "python": "3.11", "license": "MIT"},
    "example": {"package": "digits_exp", "python": "3.11", "license": "MIT"},
    "python312": {"package": "vision_ablations", "python": "3.12", "license": "Apache-2.0"},
    "python313": {"package": "lm_scaling_2", "python": "3.13", "license": None},
}


@pytest.fixture(scope="module", params=sorted(ANSWER_SETS))
def generated(request: pytest.FixtureRequest, default_project: Path, tmp_path_factory: pytest.TempPathFactory):
    name = request.param
    if name == "defaults":
        return name, default_project
    return name, generate(tmp_path_factory.mktemp(name) / "project", **ANSWER_SETS[name])


def test_file_set_is_exactly_the_template(generated: tuple[str, Path]) -> None:
    name, project = generated
    package = EXPECTED[name]["package"]
    expected = COMMON_FILES | {f"src/{package}/{module}" for module in PACKAGE_MODULES}
    assert set(git(project, "ls-files").splitlines()) == expected
    assert git(project, "status", "--porcelain") == ""


def test_answers_reach_the_project(generated: tuple[str, Path]) -> None:
    name, project = generated
    expected = EXPECTED[name]
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert pyproject["name"] == expected["package"]
    assert pyproject["requires-python"] == f">={expected['python']}"
    assert pyproject.get("license") == expected["license"]
    assert pyproject["scripts"] == {expected["package"]: f"{expected['package']}.cli:main"}
    assert (project / ".python-version").read_text().strip() == expected["python"]
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["package_name"] == expected["package"]
    assert answers["_src_path"]
    if "description" in ANSWER_SETS[name]:
        assert pyproject["description"] == ANSWER_SETS[name]["description"]


def test_generated_code_is_ruff_clean(generated: tuple[str, Path]) -> None:
    _, project = generated
    for command in (["ruff", "check", "--no-cache", "."], ["ruff", "format", "--check", "--no-cache", "."]):
        done = subprocess.run(command, cwd=project, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def test_one_initial_commit_with_a_current_lock(generated: tuple[str, Path]) -> None:
    _, project = generated
    assert git(project, "branch", "--show-current") == "main"
    log = git(project, "log", "--format=%s").splitlines()
    assert len(log) == 1
    assert log[0].startswith("Initial commit from ")
    done = subprocess.run(["uv", "lock", "--check"], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
