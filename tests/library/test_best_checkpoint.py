"""The best checkpoint across resumes (core/best.py): a best recorded at or before the checkpoint a run resumes from
is carried over; one recorded after it belongs to an attempt that was rolled back, and names a checkpoint the
resumed run never made, so the resumed run forgets it."""

from __future__ import annotations

import json
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.runs import RunTraining

best = import_module("samebits.core.best")
checkpoint = import_module("samebits.core.checkpoint")


def recorded(folder: Path, step: int, value: float) -> None:
    entry = {"checkpoint": f"step_{step:06d}.pt", "step": step, "metric": "val/acc", "mode": "max", "value": value}
    (folder / "best.json").write_text(json.dumps(entry))


@pytest.mark.parametrize("step", [10, 20])
def test_a_best_recorded_up_to_the_resumed_checkpoint_is_carried_over(tmp_path: Path, step: int) -> None:
    recorded(tmp_path, step, 0.9)
    tracker = best.BestTracker(tmp_path, "val/acc", "max", resumed_step=20)
    assert not tracker.improved_by({"val/acc": 0.85})
    assert tracker.improved_by({"val/acc": 0.95})


def test_a_best_recorded_after_the_resumed_checkpoint_is_forgotten(tmp_path: Path) -> None:
    recorded(tmp_path, 30, 0.99)  # the attempt that reached 30 was rolled back to the checkpoint at 20
    tracker = best.BestTracker(tmp_path, "val/acc", "max", resumed_step=20)
    assert tracker.improved_by({"val/acc": 0.5}), "a rolled-back attempt's best outranked the resumed run's own"
    tracker.forget_rolled_back()
    assert not (tmp_path / "best.json").exists(), "best.json still names the rolled-back attempt's checkpoint"


def test_a_best_carried_over_is_not_forgotten(tmp_path: Path) -> None:
    recorded(tmp_path, 20, 0.9)
    best.BestTracker(tmp_path, "val/acc", "max", resumed_step=20).forget_rolled_back()
    assert json.loads((tmp_path / "best.json").read_text())["step"] == 20


# Evaluated only at 30 (the best, then, whatever it scores), checkpointed at 10, 20 and 30, stopped at 30. The worst
# loss counts as the best, so that the resumed run's later evaluation, at a lower loss, does not beat step 30's.
FIRST = ["trainer.max_steps=40", "sched.warmup_steps=5", "trainer.ckpt_every=10", "trainer.eval_every=30",
         "trainer.stop_at_step=30", "trainer.best_metric=val/loss", "trainer.best_mode=max"]  # fmt: skip
RESUMED = [*FIRST[:2], "trainer.ckpt_every=20", "trainer.eval_every=20", *FIRST[-2:]]


def test_a_run_rolled_back_past_its_best_records_a_best_of_its_own(run_training: RunTraining, tmp_path: Path) -> None:
    stopped = run_training(tmp_path, *FIRST)
    assert stopped.returncode == 75, stopped.stderr
    (run_dir,) = (tmp_path / "dev").iterdir()
    folder = run_dir / "checkpoints"
    assert json.loads((folder / "best.json").read_text())["checkpoint"] == "step_000030.pt"
    lost = folder / "step_000030.pt"
    damaged = bytearray(lost.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    lost.write_bytes(bytes(damaged))  # its checksum fails: the run resumes from step 20

    resumed = run_training(tmp_path, *RESUMED)  # evaluates (and checkpoints) at 40 only
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from the checkpoint at step 20" in resumed.stdout
    assert (
        "best.json named step_000030.pt, past the checkpoint this run resumed from" in resumed.stdout + resumed.stderr
    )
    record = json.loads((folder / "best.json").read_text())
    assert record["checkpoint"] == "step_000040.pt", f"best.json names {record['checkpoint']}, not made by this run"
    assert record["value"] == json.loads((run_dir / "summary.json").read_text())["metrics"]["val/loss"]
    assert checkpoint.CheckpointDir(folder, keep_last=3).find_best() == "step_000040.pt"
