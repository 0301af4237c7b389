"""Before `reproduce` re-runs anything, a run's records must agree: an edited or damaged one is named."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from library.helpers.runs import RunTraining

consistency = import_module("samebits.proof.consistency")

SHORT = ["trainer.max_steps=20", "sched.warmup_steps=2", "trainer.ckpt_every=10", "trainer.eval_every=10"]


@pytest.fixture(scope="module")
def finished(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("consistent")
    done = run_training(runs, *SHORT, "optim.lr=0.002")
    assert done.returncode == 0, done.stderr
    (run_dir,) = (runs / "dev").iterdir()
    return run_dir


def edit_json(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(run_dir: Path) -> None:
        found = json.loads((run_dir / name).read_text())
        change(found)
        (run_dir / name).write_text(json.dumps(found))

    return edit


def replace(name: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(run_dir: Path) -> None:
        text = (run_dir / name).read_text()
        assert old in text, text
        (run_dir / name).write_text(text.replace(old, new, 1))

    return edit


def rehashed_config(run_dir: Path) -> None:
    """lr edited in config.yaml, and provenance.json's hash made to match: only the name still says otherwise."""
    replace("config.yaml", "  lr: 0.002\n", "  lr: 0.003\n")(run_dir)
    edited = OmegaConf.load(run_dir / "config.yaml")
    digest = consistency.config_sha256(consistency.identity(edited))
    edit_json("provenance.json", lambda found: found["run"].update(config_sha256=digest))(run_dir)


def another_attempt(run_dir: Path) -> None:
    provenance = json.loads((run_dir / "provenance.json").read_text())
    attempt = {"git": provenance["git"] | {"commit": "f" * 40}, "started_at": "2026-01-01T00:00:00+00:00"}
    (run_dir / "attempts.jsonl").write_text(json.dumps(attempt) + "\n")


def launched_elsewhere(run_dir: Path) -> None:
    (run_dir / "launch.json").write_text(json.dumps({"run_name": run_dir.name, "commit": "e" * 40}))


EDITS = {
    "lr in config.yaml": (replace("config.yaml", "  lr: 0.002\n", "  lr: 0.003\n"), "config.yaml does not hash to"),
    "an override in provenance.json": (
        edit_json("provenance.json", lambda found: found["run"]["overrides"].append("seed=5")),
        "provenance.json's overrides: seed: config.yaml has 0, the run was started with seed=5",
    ),
    "config.yaml and its hash, both": (rehashed_config, "the run's name ends in"),
    "the run's name": (
        edit_json("provenance.json", lambda found: found["run"].update(name="other")),
        "provenance.json names run 'other'",
    ),
    "a damaged config.yaml": (replace("config.yaml", "trainer:", "trainer: ["), "config.yaml is damaged"),
    "an attempt at another commit": (another_attempt, "attempt 2 of the run ran ffffffffffff"),
    "launched at another commit": (launched_elsewhere, "launch.json launched"),
    "status.json of another step": (
        edit_json("status.json", lambda found: found.update(step=10)),
        "status.json says finished at step 10, but summary.json says finished at step 20",
    ),
    "a damaged summary.json": (lambda run_dir: (run_dir / "summary.json").write_text("{"), "summary.json is damaged"),
    "a damaged metric line": (
        replace("metrics.jsonl", '{"step": 10', '{"step": 1O'),
        "metrics.jsonl line 1 is damaged",
    ),
    "a repeated metric line": (
        lambda run_dir: (run_dir / "metrics.jsonl").write_text((run_dir / "metrics.jsonl").read_text() * 2),
        "metrics.jsonl line 3 is out of order",
    ),
}


def test_the_records_of_a_finished_run_agree(finished: Path) -> None:
    provenance, lines = consistency.check(finished, finished=True)
    assert provenance["run"]["name"] == finished.name and [line["step"] for line in lines] == [10, 20]


@pytest.mark.parametrize("edit", EDITS)
def test_an_edited_or_damaged_record_is_named(finished: Path, tmp_path: Path, edit: str) -> None:
    change, message = EDITS[edit]
    run_dir = tmp_path / "dev" / finished.name
    shutil.copytree(finished, run_dir)
    change(run_dir)
    with pytest.raises(consistency.Disagreement) as found:
        consistency.check(run_dir, finished=True)
    assert message in str(found.value)
