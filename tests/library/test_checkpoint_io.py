"""How checkpoints are written: the checksum is the whole file's, taken while it is fsynced; a damaged file that
still loads is skipped; pruning leaves nothing behind; and each state that a crash between a save's renames can
leave falls back to the checkpoint before."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from importlib import import_module
from pathlib import Path

import pytest
import torch
import xxhash

checkpoint = import_module("samebits.core.checkpoint")

ORIGIN = {"config_sha256": "c" * 64, "commit": "a" * 40, "uv_lock_sha256": "l" * 64}


def state(value: float, size: int = 3) -> dict[str, object]:
    return {"model": {"weight": torch.full((size,), value)}, "origin": ORIGIN, "rng": [{}]}


def test_the_manifest_holds_the_checksum_of_the_whole_file(tmp_path: Path) -> None:
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=3)
    big = {**state(1.0), "optimizer": {"exp_avg": torch.randn(3_000_000)}}  # 12 MB, over many writes and blocks
    path = directory.save(big, 100)
    checksum = "xxh3_128:" + xxhash.xxh3_128(path.read_bytes()).hexdigest()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest == {"format": 2, "latest": path.name, "checksums": {path.name: checksum}}
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("checksum")]


def written_before(folder: Path, *steps: int) -> None:
    """The layout samebits 0.3 and before wrote: torch.save files, their bare sha256 in a flat manifest.json (format
    1), the newest named in `latest`."""
    for step in steps:
        torch.save({"format": 1, "step": step, **state(float(step))}, folder / f"step_{step:06d}.pt")
    manifest = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in folder.glob("step_*.pt")}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "latest").write_text(f"step_{max(steps):06d}.pt")


def test_a_checkpoint_folder_written_before_still_loads(tmp_path: Path) -> None:
    written_before(tmp_path, 100)
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=3)
    assert directory.load_latest()["step"] == 100
    directory.save(state(2.0), 200)  # one manifest, two algorithms: each entry names its own
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["format"] == 2 and manifest["latest"] == "step_000200.pt"
    listed = manifest["checksums"]
    assert len(listed["step_000100.pt"]) == 64 and listed["step_000200.pt"].startswith("xxh3_128:")
    directory.clean()  # waits for the format-1 `latest` to be deleted: the manifest names the latest now
    assert sorted(path.name for path in tmp_path.iterdir()) == ["manifest.json", "step_000100.pt", "step_000200.pt"]
    assert checkpoint.CheckpointDir(tmp_path, keep_last=3).load_latest()["step"] == 200


def test_a_format_1_latest_still_picks_the_checkpoint(tmp_path: Path) -> None:
    written_before(tmp_path, 100, 200)
    (tmp_path / "latest").write_text("step_000100.pt")  # a run rolled back to it
    assert checkpoint.CheckpointDir(tmp_path, keep_last=3).load_latest()["step"] == 100


def test_a_manifest_from_a_newer_samebits_is_reported_and_each_checkpoint_loaded_instead(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=3)
    for step in (100, 200):
        directory.save(state(float(step)), step)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": 3, "entries": []}))
    with caplog.at_level(logging.WARNING):
        assert checkpoint.CheckpointDir(tmp_path, keep_last=3).load_latest()["step"] == 200
    assert "manifest.json is in format 3, from a newer samebits: update samebits" in caplog.text


def test_a_save_fsyncs_the_checkpoint_the_manifest_and_the_folder_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=1)
    directory.save(state(1.0), 100)
    synced: list[str] = []
    real_fsync = os.fsync
    folder = tmp_path.stat().st_ino

    def fsync(descriptor: int) -> None:
        inode = os.fstat(descriptor).st_ino
        synced.append("folder" if inode == folder else "file")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    directory.save(state(2.0), 200)
    assert synced == ["file", "file", "folder"]


def test_a_damaged_checkpoint_written_before_fails_its_sha256(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    written_before(tmp_path, 100, 200)
    damaged = tmp_path / "step_000200.pt"
    damaged.write_bytes(damaged.read_bytes().replace(torch.full((3,), 200.0).numpy().tobytes(), b"\0" * 12))
    with caplog.at_level(logging.WARNING):
        assert checkpoint.CheckpointDir(tmp_path, keep_last=3).find_latest() == "step_000100.pt"
    assert "step_000200.pt fails its sha256 checksum" in caplog.text


def test_a_checksum_of_an_unknown_algorithm_is_never_taken_for_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    written_before(tmp_path, 100, 200)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["step_000200.pt"] = "blake9:" + manifest["step_000200.pt"]  # from a newer samebits
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING):
        assert checkpoint.CheckpointDir(tmp_path, keep_last=3).find_latest() == "step_000100.pt"
    assert "has a blake9 checksum, which this samebits cannot check: update samebits" in caplog.text


def test_what_a_damaged_checkpoint_held_is_never_returned(tmp_path: Path) -> None:
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=3)
    directory.save(state(1.0), 100)
    directory.save(state(2.0), 200)
    damaged = tmp_path / "step_000200.pt"
    data = bytearray(damaged.read_bytes())
    offset = data.index(torch.full((3,), 2.0).numpy().tobytes())
    data[offset : offset + 4] = torch.tensor([9.0]).numpy().tobytes()  # it still loads, with a changed value
    damaged.write_bytes(bytes(data))
    assert torch.load(damaged, weights_only=True)["model"]["weight"][0] == 9.0
    assert directory.find_latest() == "step_000100.pt"
    assert torch.equal(directory.load_latest()["model"]["weight"], torch.full((3,), 1.0))


def test_pruning_leaves_only_the_kept_files(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=1)
    for step in (100, 200, 300):
        directory.save(state(float(step), size=1_000_000), step)
        assert sorted(path.name for path in tmp_path.glob("step_*.pt")) == [f"step_{step:06d}.pt"]
    with caplog.at_level(logging.WARNING):
        directory.clean()  # waits for the last deletion: nothing is left for it to report
    assert caplog.text == ""
    assert sorted(path.name for path in tmp_path.iterdir()) == ["manifest.json", "step_000300.pt"]


@pytest.mark.parametrize("keep_last", [1, 2])
@pytest.mark.parametrize(("checkpoint_renamed", "manifest_renamed"), [(True, False), (False, True)])
def test_a_crash_that_kept_one_rename_of_a_save_falls_back(
    tmp_path: Path, checkpoint_renamed: bool, manifest_renamed: bool, keep_last: int
) -> None:
    """The renames of a save share one fsync of the folder: a crash before it may keep either without the other."""
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=keep_last)
    for step in (100, 200):
        directory.save(state(float(step)), step)
    directory.clean()  # waits for the checkpoint that keep_last=1 pruned to be deleted: it is renamed away first
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    directory.save(state(300.0), 300)
    directory.clean()  # waits for the pruned checkpoint to be deleted
    after = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    for path in tmp_path.iterdir():
        path.unlink()
    left = {**before, **({"step_000300.pt": after["step_000300.pt"]} if checkpoint_renamed else {})}
    left |= {"manifest.json": after["manifest.json"]} if manifest_renamed else {}
    for name, data in left.items():
        (tmp_path / name).write_bytes(data)
    restarted = checkpoint.CheckpointDir(tmp_path, keep_last=keep_last)
    restarted.clean()
    assert restarted.load_latest()["step"] == 200
    restarted.save(state(300.0), 300)  # and the run goes on from there
    restarted.clean()
    expected = ["step_000200.pt", "step_000300.pt"][-keep_last:]
    assert sorted(path.name for path in tmp_path.glob("step_*.pt")) == expected
    assert json.loads((tmp_path / "manifest.json").read_text())["latest"] == "step_000300.pt"
    assert restarted.load_latest()["step"] == 300
