"""Bad answers are refused, with a message that says what to type instead, and nothing is left behind."""

from __future__ import annotations

import keyword
import sys
from pathlib import Path

import pytest
import yaml

from helpers.generation import ROOT, copy_template

BAD_ANSWERS = [
    ("project_name", "", "The project name is empty"),
    ("project_name", "   ", "The project name is empty"),
    ("project_name", "ml/experiments", 'contains a slash: type a name without "/"'),
    ("package_name", "2x", '"2x" is not a valid package name: use lowercase letters'),
    ("package_name", "my-pkg", '"my-pkg" is not a valid package name'),
    ("package_name", "MyPkg", '"MyPkg" is not a valid package name'),
    ("package_name", "class", '"class" is a Python keyword: pick another name (e.g. class_exp)'),
    ("package_name", "json", '"json" would shadow the module of the same name'),
    ("package_name", "torch", '"torch" would shadow the module of the same name'),
    ("package_name", "hydra", '"hydra" would shadow the module of the same name'),
    ("author_email", "not-an-email", '"not-an-email" is not an email address'),
    ("description", "two\nlines", "The description has several lines"),
]


@pytest.mark.parametrize(("question", "answer", "message"), BAD_ANSWERS)
def test_bad_answer_is_refused_with_what_to_type(question: str, answer: str, message: str, tmp_path: Path) -> None:
    destination = tmp_path / "project"
    done = copy_template(destination, **{question: answer})
    assert done.returncode != 0
    # With --defaults, Copier prints its own traceback; the message is its last line.
    last_line = done.stderr.strip().splitlines()[-1]
    assert last_line.startswith(f"ValueError: Validation error for question '{question}': ")
    assert message in last_line
    assert not destination.exists()


@pytest.mark.parametrize(
    ("question", "answer", "choices"),
    [("python_version", "3.9", "['3.11', '3.12', '3.13']"), ("license", "WTFPL", "['MIT', 'BSD-3-Clause',")],
)
def test_an_answer_outside_the_choices_is_refused_with_the_choices(
    question: str, answer: str, choices: str, tmp_path: Path
) -> None:
    done = copy_template(tmp_path / "project", **{question: answer})
    assert done.returncode != 0
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"ValueError: Invalid choice for '{question}': '{answer}' is not in {choices}")
    )
    assert not (tmp_path / "project").exists()


def test_reserved_names_cover_this_python_and_the_dependencies() -> None:
    copier_yml = yaml.safe_load((ROOT / "copier.yml").read_text())
    reserved = set(copier_yml["reserved_module_names"]["default"])
    stdlib = {name for name in sys.stdlib_module_names if not name.startswith("_")}
    assert stdlib <= reserved, sorted(stdlib - reserved)
    assert {"torch", "hydra", "omegaconf", "numpy", "sklearn", "tqdm", "nox", "pytest"} <= reserved
    assert {"conftest", "helpers", "tests"} <= reserved  # what the project's tests import from tests/
    assert not reserved & set(keyword.kwlist)  # keywords have their own message


@pytest.mark.parametrize(
    ("project_name", "package_name"),
    [("My Experiments", "my_experiments"), ("LM-Scaling 2", "lm_scaling_2"), ("2D Vision!", "d_vision")],
)
def test_package_name_is_derived_from_the_project_name(project_name: str, package_name: str, tmp_path: Path) -> None:
    import copier

    worker = copier.run_copy(
        str(ROOT),
        tmp_path / "p",
        data={"project_name": project_name},
        defaults=True,
        vcs_ref="HEAD",
        pretend=True,
        unsafe=True,
        quiet=True,
    )
    assert worker.answers.combined["package_name"] == package_name


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ("https://x/y.git", 'external_deps must be {form}; got "https://x/y.git".'),
        ("{url: https://x/y.git}", 'external_deps must be {form}; got {{"url": "https://x/y.git"}}.'),
        ("[https://x/y.git, 3]", "external_deps entry 3 is not a git URL: external_deps must be {form}."),
        ('["https://x/y.git @v1"]', 'external_deps entry "https://x/y.git @v1" is not a git URL'),
        # Not YAML at all: Copier parses a yaml answer before its validator runs, so these are taken as text.
        ("notalist: [", 'external_deps must be {form}; got "notalist: [".'),
        ("[https://x/y.git", 'external_deps must be {form}; got "[https://x/y.git".'),
        ('["https://x/y.git]', 'external_deps must be {form}; got "[\\"https://x/y.git]".'),
    ],
)
def test_a_malformed_external_deps_answer_gets_a_hint_with_the_expected_form(
    answer: str, shown: str, tmp_path: Path
) -> None:
    form = (
        "a YAML list [URL, URL@REF, ...] (REF: a tag, branch or SHA), e.g. [https://github.com/org/lib.git@v1.2], "
        "or [] for none"
    )
    destination = tmp_path / "project"
    done = copy_template(destination, external_deps=answer)
    assert done.returncode != 0
    # Copier prints its own traceback with --defaults (interactively it asks again): the hint is its last line.
    last_line = done.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ValueError: Validation error for question 'external_deps': "), done.stderr
    assert shown.format(form=form) in last_line
    assert f"must be {form}" in last_line
    assert not destination.exists()
