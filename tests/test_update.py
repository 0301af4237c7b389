"""`copier update` across real template versions keeps the user's work (the versions: helpers/template_versions.py).

Users' projects are generated at v0.1.0 (the flat layout) and at v0.2.0 (the last that copied the machinery), then
edited as users do: the model's config, a new experiment, a function added to the models module, a bumped
submodule, all committed. Every test works on a clone of such a project, so each starts from the same history.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import template_versions
from helpers.commands import run
from helpers.generation import DEFAULT_PACKAGE
from helpers.git import GIT_FILE, IDENTITY, git, make_package_repo

pytestmark = pytest.mark.slow

PACKAGE = f"src/{DEFAULT_PACKAGE}"
USER_FUNCTION = '''

def count_parameters(model: nn.Module) -> int:
    """How many weights the model trains."""
    return sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad)
'''
USER_EXPERIMENT = "# @package _global_\n# Mine: the default MLP, trained longer.\ntrainer:\n  max_steps: 900\n"
USER_HIDDEN_SIZES = "hidden_sizes: [256, 128]"
USER_MOMENTUM = "momentum: 0.95"  # in configs/optim/sgd.yaml, which v0.4.0 removes


def copier(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Copier as users run it, in its own process, from the project folder."""
    command = [sys.executable, "-m", "copier", *args, "--trust", "--defaults"]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=600)


def update(project: Path, version: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = copier(project, "update", f"--vcs-ref={version}", *args)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def commit(project: Path, message: str) -> None:
    subprocess.run(["git", "add", "--all"], cwd=project, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "--no-verify", "-m", message], cwd=project, check=True)


def clone(project: Path, destination: Path) -> Path:
    subprocess.run([*GIT_FILE, "clone", "--quiet", "--recurse-submodules", str(project), str(destination)], check=True)
    return destination


def files_of(project: Path) -> dict[str, bytes]:
    """Every file of the working tree (submodules' own .git excluded), to prove that nothing changed."""
    return {
        str(path.relative_to(project)): path.read_bytes()
        for path in project.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(project).parts
    }


def conflicted(project: Path) -> list[str]:
    """Files with inline conflict markers anywhere in the project, and files git lists as unmerged."""
    marked = subprocess.run(["git", "grep", "-l", "-e", "^<<<<<<< "], cwd=project, capture_output=True, text=True)
    unmerged = git(project, "diff", "--name-only", "--diff-filter=U")
    return sorted(set(marked.stdout.split()) | set(unmerged.split()))


def answers(project: Path) -> dict:
    return yaml.safe_load((project / ".copier-answers.yml").read_text())


def lock_is_current(project: Path) -> bool:
    return subprocess.run(["uv", "lock", "--check"], cwd=project, capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict:
    repo = tmp_path_factory.mktemp("template") / "repo"
    return {"repo": repo, "commits": template_versions.build(repo)}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("library")
    shas = make_package_repo(root / "labmodels", "labmodels", ["1.0", "1.1", "1.2"])
    second = make_package_repo(root / "labdata", "labdata", ["0.1"])
    return {"url": str(root / "labmodels"), "shas": shas, "second": f"{root / 'labdata'}@{second[0]}"}


def generate_at(version: str, template: dict, library: dict, project: Path) -> Path:
    deps = json.dumps([f"{library['url']}@{library['shas'][0]}"])
    command = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet", f"--vcs-ref={version}"]
    done = subprocess.run([*command, f"--data=external_deps={deps}", str(template["repo"]), str(project)], text=True)
    assert done.returncode == 0
    assert answers(project)["_commit"] == version
    model_config = project / "configs/model/mlp.yaml"
    model_config.write_text(model_config.read_text().replace("hidden_sizes: [128, 128]", USER_HIDDEN_SIZES))
    (project / "configs/experiment/mine.yaml").write_text(USER_EXPERIMENT)
    sgd = project / "configs/optim/sgd.yaml"
    sgd.write_text(sgd.read_text().replace("momentum: 0.9", USER_MOMENTUM))
    subprocess.run(["git", "-C", "external/labmodels", "checkout", "--quiet", library["shas"][1]], cwd=project)
    return project


@pytest.fixture(scope="module")
def edited_v1(template: dict, library: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v0.1.0 (flat layout) project with the user's edits committed."""
    project = generate_at("v0.1.0", template, library, tmp_path_factory.mktemp("user-v1") / "my-exp")
    with (project / PACKAGE / "models.py").open("a") as models:
        models.write(USER_FUNCTION)
    commit(project, "My experiment; labmodels 1.1")
    return project


SHORT_RUN = ["experiment=mine", "trainer.max_steps=20", "sched.warmup_steps=5", "trainer.progress_bar=false"]


@pytest.fixture(scope="module")
def earlier_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def edited_v2(template: dict, library: dict, earlier_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v0.2.0 (copied machinery) project with the user's edits committed, and one short run trained by it."""
    project = generate_at("v0.2.0", template, library, tmp_path_factory.mktemp("user-v2") / "my-exp")
    with (project / PACKAGE / "research/models/mlp.py").open("a") as models:
        models.write(USER_FUNCTION)
    commit(project, "My experiment; labmodels 1.1")
    train = ["uv", "run", "--frozen", "python", "-m", f"{DEFAULT_PACKAGE}.train", *SHORT_RUN]
    run(project, "env", f"RUNS_DIR={earlier_runs}", *train)
    return project


@pytest.fixture(scope="module")
def updated_v3(edited_v2: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    project = clone(edited_v2, tmp_path_factory.mktemp("v3") / "my-exp")
    done = update(project, "v0.3.0")
    state = {"project": project, "stderr": done.stderr, "conflicted": conflicted(project)}
    state["lock"] = lock_is_current(project)
    commit(project, "Update to template v0.3.0")
    return state


def assert_user_work_kept(project: Path, library: dict, template: dict, version: str) -> None:
    assert (project / "configs/experiment/mine.yaml").read_text() == USER_EXPERIMENT
    new_module = git(template["repo"], "show", f"{version}:{template_versions.PACKAGE_DIR}/research/models/mlp.py")
    assert (project / PACKAGE / "research/models/mlp.py").read_text() == new_module + "\n" + USER_FUNCTION
    assert not (project / PACKAGE / "models.py").exists()
    assert git(project, "rev-parse", "HEAD:external/labmodels") == library["shas"][1]
    assert git(project, "-C", "external/labmodels", "rev-parse", "HEAD") == library["shas"][1]


def assert_library_pinned(project: Path, template: dict, version: str) -> None:
    assert git(project, "config", "--file", ".gitmodules", "submodule.external/samebits.url") == str(template["repo"])
    staged = git(project, "ls-files", "--stage", "external/samebits").split()[1]  # an update does not commit
    assert staged == template["commits"][version]
    assert git(project, "-C", "external/samebits", "rev-parse", "HEAD") == template["commits"][version]


def test_update_to_the_library_keeps_every_edit_and_drops_the_copies(
    updated_v3: dict, library: dict, template: dict, earlier_runs: Path
) -> None:
    project = updated_v3["project"]
    assert updated_v3["conflicted"] == []
    assert_user_work_kept(project, library, template, "v0.3.0")
    assert_library_pinned(project, template, "v0.3.0")
    model_config = (project / "configs/model/mlp.yaml").read_text()
    assert USER_HIDDEN_SIZES in model_config
    assert USER_MOMENTUM in (project / "configs/optim/sgd.yaml").read_text()
    for copied in ("core", "launch", "tracking", "analysis", "proof"):
        assert not (project / PACKAGE / copied).exists(), copied
    assert not (project / "tests/test_checkpoint.py").exists()
    assert "from samebits import entry" in (project / PACKAGE / "train.py").read_text()  # the thin entry point
    assert answers(project)["_commit"] == "v0.3.0"
    assert updated_v3["lock"], "uv.lock does not match pyproject.toml after the update"
    assert git(project, "status", "--porcelain") == ""
    # The project works: the user's function is importable, its tests pass, and the run that v0.2.0 trained is the
    # same run now (same name, same config hash), so it is not trained again.
    module = f"{DEFAULT_PACKAGE}.research.models.mlp"
    code = f"from {module} import MLP, count_parameters; print(count_parameters(MLP(4, 2, [3], 0.0)))"
    assert run(project, "uv", "run", "--frozen", "python", "-c", code).stdout.split() == ["23"]
    fast = ["tests/test_layout.py", "tests/test_models.py", "tests/test_experiments.py"]
    run(project, "uv", "run", "--frozen", "pytest", "-q", "-p", "no:cacheprovider", *fast)
    train = ["uv", "run", "--frozen", "python", "-m", f"{DEFAULT_PACKAGE}.train", *SHORT_RUN]
    again = run(project, "env", f"RUNS_DIR={earlier_runs}", *train)
    (run_dir,) = (earlier_runs / "dev").iterdir()
    assert f"{run_dir.name} has finished already" in again.stdout + again.stderr
    run(project, "nox", "--non-interactive", "-s", "deps")


def test_an_edited_copy_of_the_machinery_stops_the_update_before_any_change(edited_v2: Path, tmp_path: Path) -> None:
    project = clone(edited_v2, tmp_path / "my-exp")
    checkpoint = project / PACKAGE / "core/checkpoint.py"
    checkpoint.write_text(checkpoint.read_text() + "\n# our own tweak\n")
    commit(project, "A patch of our own in the copied machinery")
    before, head = files_of(project), git(project, "rev-parse", "HEAD")
    done = copier(project, "update", "--vcs-ref=v0.3.0")
    assert done.returncode != 0
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"{PACKAGE}/core/checkpoint.py (now samebits' src/samebits/core/checkpoint.py)" in line
    assert "patch external/samebits" in line
    assert files_of(project) == before and git(project, "rev-parse", "HEAD") == head


def assert_removed_but_edited_file_kept(project: Path, stderr: str) -> None:
    assert USER_MOMENTUM in (project / "configs/optim/sgd.yaml").read_text()
    assert "kept configs/optim/sgd.yaml, which v0.4.0 no longer has: you edited it" in stderr


def test_a_clash_marks_that_file_only_and_pre_commit_refuses_it(
    updated_v3: dict, template: dict, tmp_path: Path
) -> None:
    project = clone(updated_v3["project"], tmp_path / "my-exp")
    done = update(project, "v0.4.0")
    assert conflicted(project) == ["configs/model/mlp.yaml"]
    assert_removed_but_edited_file_kept(project, done.stderr)
    assert_library_pinned(project, template, "v0.4.0")  # the library's pin moved with the template
    model_config = (project / "configs/model/mlp.yaml").read_text()
    assert f"<<<<<<< before updating\n{USER_HIDDEN_SIZES}\n=======\nhidden_sizes: [64, 64]\n>>>>>>> after updating" in (
        model_config
    )
    readme = (project / "README.md").read_text()  # its conflict example is this test's output
    example = readme.split("$ cat -n configs/model/mlp.yaml\n")[1].split("```")[0].splitlines()
    numbered = dict(enumerate(model_config.splitlines(), start=1))
    assert [line.split("\t", 1) for line in example] == [[f"{n:6}", numbered[n]] for n in range(6, 14)]
    assert "log_grad_norm: false" in (project / "configs/trainer/default.yaml").read_text()  # merged cleanly
    assert "tags: [exploratory, template-v0.3]" in (project / "configs/train.yaml").read_text()
    assert (project / "docs/faq.md").is_file()
    assert lock_is_current(project), "the new dependency was not locked"
    assert "rich" in (project / "uv.lock").read_text()
    run(project, "uv", "run", "--frozen", "pre-commit", "install")
    subprocess.run(["git", "add", "--all"], cwd=project, check=True)  # "resolved" without removing the markers
    refused = run(project, "git", *IDENTITY, "commit", "-m", "Update to v0.4.0", expect=1)
    hooks = refused.stdout + refused.stderr
    assert re.search(r"^no merge conflict markers\.+Failed$", hooks, flags=re.MULTILINE), hooks
    marker = r"^configs/model/mlp.yaml:\d+: Merge conflict string '<<<<<<<' found$"
    assert re.search(marker, hooks, flags=re.MULTILINE), hooks
    for line in (
        readme.split("a commit that still holds a marker is refused:\n\n```text\n")[1].split("```")[0].splitlines()
    ):
        assert line in hooks.splitlines(), line
    resolved = (
        model_config.split("<<<<<<< before updating\n")[0]
        + USER_HIDDEN_SIZES
        + "\n"
        + (model_config.split(">>>>>>> after updating\n")[1])
    )
    (project / "configs/model/mlp.yaml").write_text(resolved)
    subprocess.run(["git", "add", "--all"], cwd=project, check=True)
    run(project, "git", *IDENTITY, "commit", "-m", "Update to v0.4.0")
    assert answers(project)["_commit"] == "v0.4.0"


def test_from_the_flat_layout_straight_to_v0_4_0(
    edited_v1: Path, library: dict, template: dict, tmp_path: Path
) -> None:
    project = clone(edited_v1, tmp_path / "my-exp")
    done = update(project, "v0.4.0")
    assert conflicted(project) == ["configs/model/mlp.yaml"]
    assert_user_work_kept(project, library, template, "v0.4.0")
    assert_removed_but_edited_file_kept(project, done.stderr)
    assert lock_is_current(project)
    assert_library_pinned(project, template, "v0.4.0")
    assert answers(project)["_commit"] == "v0.4.0"


def test_the_update_names_the_users_files_that_import_a_moved_module(edited_v1: Path, tmp_path: Path) -> None:
    project = clone(edited_v1, tmp_path / "my-exp")
    (project / PACKAGE / "extras.py").write_text("from . import data\nfrom .models import MLP\n\nWIDE = MLP\n")
    (project / "configs/model/digits_net.yaml").write_text(f"_target_: {DEFAULT_PACKAGE}.models.MLP\n")
    commit(project, "Modules of our own that use the flat layout")
    notes = [line for line in update(project, "v0.3.0").stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: configs/model/digits_net.yaml still imports {DEFAULT_PACKAGE}.models, "
        f"which is now {DEFAULT_PACKAGE}.research.models.mlp",
        f"note: {PACKAGE}/extras.py still imports {DEFAULT_PACKAGE}.data, "
        f"which is now {DEFAULT_PACKAGE}.research.datasets.digits",
        f"note: {PACKAGE}/extras.py still imports {DEFAULT_PACKAGE}.models, "
        f"which is now {DEFAULT_PACKAGE}.research.models.mlp",
    ]


def test_an_update_on_a_dirty_tree_changes_nothing(edited_v1: Path, tmp_path: Path) -> None:
    project = clone(edited_v1, tmp_path / "my-exp")
    (project / "configs/experiment/mine.yaml").write_text(USER_EXPERIMENT + "seed: 3\n")
    before = files_of(project)
    done = copier(project, "update", "--vcs-ref=v0.3.0")
    assert done.returncode != 0
    assert "Destination repository is dirty; cannot continue" in done.stderr
    assert files_of(project) == before


@pytest.mark.parametrize("case", ["clash", "taken"])
def test_an_edit_that_cannot_be_carried_stops_the_update_before_any_change(
    edited_v1: Path, tmp_path: Path, case: str
) -> None:
    project = clone(edited_v1, tmp_path / "my-exp")
    models = project / PACKAGE / "models.py"
    if case == "clash":  # a docstring of the user's, on the line that v0.3.0 also changed
        first_line = models.read_text().splitlines()[0]
        models.write_text(models.read_text().replace(first_line, '"""Our models, with our own docstring."""'))
        expected = f"{PACKAGE}/models.py -> {PACKAGE}/research/models/mlp.py"
    else:  # a file of the user's where v0.3.0 puts models.py
        (project / PACKAGE / "research/models").mkdir(parents=True)
        (project / PACKAGE / "research/models/mlp.py").write_text("# ours\n")
        expected = f"{PACKAGE}/models.py (its new place {PACKAGE}/research/models/mlp.py is taken)"
    commit(project, f"An edit that v0.3.0 cannot carry ({case})")
    before, head = files_of(project), git(project, "rev-parse", "HEAD")
    done = copier(project, "update", "--vcs-ref=v0.3.0")
    assert done.returncode != 0
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert expected in line and "by hand" in line
    assert files_of(project) == before and git(project, "rev-parse", "HEAD") == head
    assert git(project, "status", "--porcelain") == ""


def test_a_new_external_dependency_given_on_update_is_added(updated_v3: dict, library: dict, tmp_path: Path) -> None:
    """...and an entry whose ref changed leaves its pin alone, saying how to move it."""
    project = clone(updated_v3["project"], tmp_path / "my-exp")
    deps = [f"{library['url']}@{library['shas'][2]}", library["second"]]
    done = update(project, "v0.3.0", f"--data=external_deps={json.dumps(deps)}")
    assert answers(project)["external_deps"] == deps
    assert (
        f"note: external/labmodels stays at its pin {library['shas'][1][:12]}; to move it to {library['shas'][2]}: "
        f"git -C external/labmodels checkout {library['shas'][2]} && git add external/labmodels"
    ) in done.stderr
    assert git(project, "config", "--file", ".gitmodules", "submodule.external/labdata.path") == "external/labdata"
    assert (project / "external/labdata/src/labdata/__init__.py").is_file()
    assert git(project, "ls-files", "--stage", "external/labmodels").split()[1] == library["shas"][1]  # kept
    assert lock_is_current(project)


def test_recopy_keeps_the_answers_the_history_and_the_pins(updated_v3: dict, library: dict, tmp_path: Path) -> None:
    project = clone(updated_v3["project"], tmp_path / "my-exp")
    before, head = answers(project), git(project, "rev-parse", "HEAD")
    done = copier(project, "recopy", "--overwrite", "--vcs-ref=v0.3.0")
    assert done.returncode == 0, done.stderr[-4000:]
    assert answers(project) == before
    assert git(project, "rev-parse", "HEAD") == head  # no second "initial commit"
    assert git(project, "ls-files", "--stage", "external/labmodels").split()[1] == library["shas"][1]
    assert git(project, "-C", "external/labmodels", "rev-parse", "HEAD") == library["shas"][1]
    assert (project / "configs/experiment/mine.yaml").read_text() == USER_EXPERIMENT  # not the template's
    assert lock_is_current(project)


def test_nox_tells_whether_a_newer_template_version_is_out(updated_v3: dict, tmp_path: Path) -> None:
    project = clone(updated_v3["project"], tmp_path / "my-exp")
    session = ["nox", "--non-interactive", "-s", "template_version"]
    assert "template v0.4.0 is out (this project is at v0.3.0)" in run(project, *session).stdout
    update(project, "v0.4.0")
    assert "up to date: template v0.4.0 is the newest release" in run(project, *session).stdout
    answers_file = project / ".copier-answers.yml"
    source = answers(project)["_src_path"]
    answers_file.write_text(answers_file.read_text().replace(source, str(tmp_path / "moved-away")))
    done = run(project, *session, expect=1)
    assert f"error: cannot list the template's versions at {tmp_path / 'moved-away'}" in done.stdout + done.stderr
