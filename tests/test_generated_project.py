"""The generated project works as a new user finds it: its own nox sessions pass, `uv run` trains, and its
reproducibility proof passes, and fails (in exactly the right rows) when determinism is broken on purpose.

These install the project's locked environment (torch included: about 2.6 GB into uv's cache the first time,
hard-linked afterwards) and start many training processes, so they are marked slow.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import DEFAULT_PACKAGE, run

pytestmark = pytest.mark.slow

ALL_PROOFS = {"1", "2", "3", "4", "5", "6", "7"}


def prove(project: Path, *args: str, expect: int) -> dict[str, str]:
    """Run the project's `nox -s reproducibility -- args`; return each table row's label and result."""
    done = run(project, "nox", "--non-interactive", "-s", "reproducibility", "--", *args, expect=expect)
    rows = re.findall(r"^(\d .+?)\s{2,}\S+\s+\S+\s+(identical|DIFFERENT)\b", done.stdout, flags=re.MULTILINE)
    assert rows, done.stdout
    assert "ERROR: " not in done.stdout, done.stdout  # a chain that crashed proves nothing, either way
    return dict(rows)


def broken_copy(default_project: Path, tmp_path: Path, module: str, line: str, replacement: str) -> Path:
    """A clone of the default project with one line of `module` changed.

    The default project's proof venv, once made, is lent to the clone as hard links: `uv sync --frozen` there then
    only reinstalls the project itself (a new file, the original's stays), instead of installing and compiling
    the whole lock again, about a minute on 2 cores for each broken copy."""
    project = tmp_path / "broken"
    subprocess.run(["git", "clone", "--quiet", str(default_project), str(project)], check=True)
    made = default_project / ".nox" / "reproducibility"
    if made.is_dir():
        (project / ".nox").mkdir()
        subprocess.run(["cp", "-al", str(made), str(project / ".nox" / "reproducibility")], check=True)
    path = project / "src" / DEFAULT_PACKAGE / module
    source = path.read_text()
    assert source.count(line) == 1, f"{line!r} is not in {module} exactly once"
    path.write_text(source.replace(line, replacement))
    return project


def test_generated_tests_and_lint_pass(default_project: Path) -> None:
    run(default_project, "nox", "--non-interactive", "-s", "lint", "tests")


def test_lint_fails_on_a_dependency_added_without_relocking(default_project: Path, tmp_path: Path) -> None:
    project = tmp_path / "unlocked"
    subprocess.run(["git", "clone", "--quiet", str(default_project), str(project)], check=True)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"tqdm>=4.66",', '"tqdm>=4.66",\n    "rich>=13",'))
    done = run(project, "nox", "--non-interactive", "-s", "lint", expect=1)
    assert "uv lock --check" in done.stdout + done.stderr
    assert "needs to be updated" in done.stdout + done.stderr


def test_generated_reproducibility_proof_passes(default_project: Path) -> None:
    rows = prove(default_project, expect=0)
    assert {label[0] for label in rows} == ALL_PROOFS
    assert set(rows.values()) == {"identical"}, rows


def test_the_language_model_passes_the_proof_too(default_project: Path) -> None:
    """The second task through the same loop, shortened to 60 steps (three checkpoints, three evaluations)."""
    shortened = ["trainer.max_steps=60", "trainer.ckpt_every=20", "trainer.eval_every=20"]
    rows = prove(default_project, "experiment=char_transformer", *shortened, expect=0)
    assert {label[0] for label in rows} == ALL_PROOFS
    assert set(rows.values()) == {"identical"}, rows


def test_the_proof_passes_in_bf16_with_accumulated_gradients(default_project: Path) -> None:
    """Two trainer switches at once: bfloat16 autocast, and two micro-batches per step (under torchrun, the
    first of each window's backward passes skips DDP's gradient sync)."""
    rows = prove(default_project, "trainer.precision=bf16", "trainer.accumulate_grad_batches=2", expect=0)
    assert {label[0] for label in rows} == ALL_PROOFS
    assert set(rows.values()) == {"identical"}, rows


RNG_RESTORES = {
    "torch": 'torch.set_rng_state(state["torch"])',  # drawn from by dropout
    "numpy": 'np.random.set_state((numpy["kind"], keys, numpy["pos"], numpy["has_gauss"], numpy["gauss"]))',
    "python": 'random.setstate((python["version"], tuple(python["internal"].tolist()), python["gauss"]))',
}


@pytest.mark.parametrize("generator", RNG_RESTORES)
def test_not_restoring_one_rng_breaks_exactly_the_resume_proofs(
    default_project: Path, tmp_path: Path, generator: str
) -> None:
    """The bundled loop draws only from torch; NumPy's and Python's generators are caught by the proof's canary."""
    project = broken_copy(default_project, tmp_path, "core/determinism.py", RNG_RESTORES[generator], "pass  # broken")
    rows = prove(project, expect=1)
    identical = {label for label, result in rows.items() if result == "identical"}
    assert {label[0] for label in rows} == ALL_PROOFS
    assert identical == {"1 two identical runs", "6 torchrun x2: two runs"}, rows


def test_not_skipping_the_consumed_batches_breaks_exactly_the_resume_proofs(
    default_project: Path, tmp_path: Path
) -> None:
    start = "self.sampler.epoch, self.sampler.start = self.epoch, self.batch"
    project = broken_copy(default_project, tmp_path, "core/batches.py", start, start.replace("self.batch", "0"))
    rows = prove(project, "--only", "1,2,3,7", expect=1)
    assert {label[0]: result for label, result in rows.items()} == {
        "1": "identical",
        "2": "DIFFERENT",
        "3": "DIFFERENT",
        "7": "DIFFERENT",
    }


def test_an_unseeded_run_fails_the_first_proof(default_project: Path, tmp_path: Path) -> None:
    unseeded = "torch.manual_seed(int.from_bytes(os.urandom(4)))"
    project = broken_copy(default_project, tmp_path, "core/determinism.py", "torch.manual_seed(seed)", unseeded)
    assert prove(project, "--only", "1", expect=1) == {"1 two identical runs": "DIFFERENT"}


def test_pre_commit_passes_on_the_first_commit_and_catches_secrets_and_conflicts(
    default_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "hooks"
    subprocess.run(["git", "clone", "--quiet", str(default_project), str(project)], check=True)
    pre_commit = ["uv", "run", "--frozen", "pre-commit", "run", "--all-files"]
    run(project, *pre_commit)
    fake_key = 'api_key = "sk_live_51HBx7bQz8sQk3nJ4pLr9tVwXy2mA"\n'
    planted = {
        "settings.py": (fake_key, "no secrets (API keys, tokens, passwords)"),
        "notes.md": ("<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n", "no merge conflict markers"),
    }
    for name, (content, hook) in planted.items():
        (project / name).write_text(content)
        subprocess.run(["git", "add", name], cwd=project, check=True)
        done = run(project, *pre_commit, expect=1)
        assert re.search(rf"^{re.escape(hook)}\.+Failed$", done.stdout, flags=re.MULTILINE), done.stdout
        subprocess.run(["git", "rm", "--quiet", "--force", name], cwd=project, check=True)


def test_new_user_trains_with_uv_run(default_project: Path) -> None:
    run(default_project, "uv", "run", "--frozen", DEFAULT_PACKAGE, "train")  # the console command: python -m's twin
    (run_dir,) = (default_project / "runs" / "dev").iterdir()
    assert {path.name for path in run_dir.iterdir()} >= {"config.yaml", "metrics.jsonl", "summary.json", "checkpoints"}
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["val/acc"] >= 0.90
