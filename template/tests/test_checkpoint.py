"""Checkpoints: atomic, checksummed, pruned, and skipped with a warning when damaged."""

from __future__ import annotations

import json
import logging
from importlib import import_module
from pathlib import Path

import pytest
import torch

from conftest import PACKAGE

checkpoint = import_module(f"{PACKAGE}.core.checkpoint")
files = import_module(f"{PACKAGE}.core.files")


ORIGIN = {"config_sha256": "c" * 64, "commit": "a" * 40, "uv_lock_sha256": "l" * 64}


def state(value: float) -> dict[str, object]:
    return {"model": {"weight": torch.full((3,), value)}, "origin": ORIGIN, "rng": [{}]}


def saved(tmp_path: Path, steps: list[int], keep_last: int = 3) -> object:
    directory = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=keep_last)
    for step in steps:
        directory.save(state(float(step)), step)
    return directory


def test_save_writes_a_weights_only_checkpoint_a_manifest_and_latest_last(tmp_path: Path) -> None:
    directory = saved(tmp_path, [100])
    folder = tmp_path / "checkpoints"
    assert (folder / "latest").read_text() == "step_000100.pt"
    assert set(json.loads((folder / "manifest.json").read_text())) == {"step_000100.pt"}
    loaded = torch.load(folder / "step_000100.pt", weights_only=True)
    assert loaded["step"] == 100 and torch.equal(loaded["model"]["weight"], torch.full((3,), 100.0))
    assert directory.load_latest()["step"] == 100


def test_only_the_last_k_are_kept(tmp_path: Path) -> None:
    saved(tmp_path, [100, 200, 300, 400], keep_last=2)
    names = sorted(p.name for p in (tmp_path / "checkpoints").glob("*.pt"))
    assert names == ["step_000300.pt", "step_000400.pt"]
    assert set(json.loads((tmp_path / "checkpoints" / "manifest.json").read_text())) == set(names)


def test_a_damaged_latest_is_reported_and_the_previous_one_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = saved(tmp_path, [100, 200])
    latest = tmp_path / "checkpoints" / "step_000200.pt"
    latest.write_bytes(latest.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        assert directory.load_latest()["step"] == 100
    assert "step_000200.pt fails its sha256 checksum" in caplog.text


def test_a_checkpoint_missing_from_the_manifest_never_completed(tmp_path: Path) -> None:
    directory = saved(tmp_path, [100])
    torch.save(state(2.0), tmp_path / "checkpoints" / "step_000200.pt")  # written, but killed before the manifest
    assert directory.load_latest()["step"] == 100


def test_nothing_to_resume_from(tmp_path: Path) -> None:
    assert checkpoint.CheckpointDir(tmp_path / "none", keep_last=3).load_latest() is None
    directory = saved(tmp_path, [100])
    (tmp_path / "checkpoints" / "step_000100.pt").write_bytes(b"garbage")
    assert directory.load_latest() is None


def test_an_intact_checkpoint_that_does_not_load_is_an_error_not_damage(tmp_path: Path) -> None:
    directory = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=3)
    directory.save({"model": {}, "rng": [], "origin": ORIGIN, "not_allowed": Path("x")}, 100)
    with pytest.raises(checkpoint.CheckpointUnreadable, match="step_000100.pt is intact but does not load"):
        directory.load_latest()


def test_what_killed_saves_left_is_removed_on_start(tmp_path: Path) -> None:
    directory = saved(tmp_path, [100])
    stale = tmp_path / "checkpoints" / f".step_000200.pt.abc{files.TEMP_SUFFIX}"
    stale.write_bytes(b"half a checkpoint")
    orphan = tmp_path / "checkpoints" / "step_000200.pt"
    torch.save(state(2.0), orphan)  # renamed into place, but killed before the manifest
    directory.clean()
    assert not stale.exists() and not orphan.exists()
    assert directory.load_latest()["step"] == 100


def test_a_save_after_a_rollback_keeps_itself_and_drops_the_abandoned_future(tmp_path: Path) -> None:
    directory = saved(tmp_path, [100, 200, 300])
    (tmp_path / "checkpoints" / "step_000300.pt").write_bytes(b"damaged")
    assert directory.find_latest() == "step_000200.pt"  # the run goes back to 200 and saves at 250
    directory.save(state(250.0), 250)
    assert sorted(json.loads((tmp_path / "checkpoints" / "manifest.json").read_text())) == [
        "step_000100.pt",
        "step_000200.pt",
        "step_000250.pt",
    ]
    assert directory.load_latest()["step"] == 250


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    files.write_json(target, {"old": True})

    def explode(out: object) -> None:
        out.write(b"{half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        files.write_atomic(target, explode)
    assert json.loads(target.read_text()) == {"old": True}
    assert list(tmp_path.iterdir()) == [target]


def test_resuming_with_another_config_commit_lock_or_world_size_is_refused_in_one_line() -> None:
    checkpointed = {**state(1.0), "step": 300}
    same = checkpoint.Origin(**ORIGIN)
    allowed = {"allow_config_change": False, "allow_code_change": False}
    assert checkpoint.resume_problems(checkpointed, same, world_size=1, **allowed) == []

    other_config = checkpoint.Origin(**{**ORIGIN, "config_sha256": "d" * 64})
    (changed,) = checkpoint.resume_problems(checkpointed, other_config, world_size=1, **allowed)
    assert changed.startswith("the checkpoint at step 300 was made with config cccccccccccc, not with this config")
    assert "trainer.allow_config_change=true" in changed
    assert (
        checkpoint.resume_problems(checkpointed, other_config, 1, allow_config_change=True, allow_code_change=False)
        == []
    )

    other_code = checkpoint.Origin(**{**ORIGIN, "commit": "b" * 40, "uv_lock_sha256": "m" * 64})
    commit, lock = checkpoint.resume_problems(checkpointed, other_code, world_size=1, **allowed)
    assert commit.startswith(
        "the checkpoint at step 300 was made by commit aaaaaaaaaaaa, not by this commit bbbbbbbbbbbb"
    )
    assert lock.startswith(
        "the checkpoint at step 300 was made by uv.lock llllllllllll, not by this uv.lock mmmmmmmmmmmm"
    )
    assert "trainer.allow_code_change=true" in commit
    assert (
        checkpoint.resume_problems(checkpointed, other_code, 1, allow_config_change=False, allow_code_change=True) == []
    )

    (ranks,) = checkpoint.resume_problems(checkpointed, same, world_size=2, **allowed)
    assert ranks == "the checkpoint was made by 1 processes, not 2: resume with as many"
