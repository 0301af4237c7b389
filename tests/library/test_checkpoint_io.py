"""How checkpoints are written: the checksum is the whole file's, taken while it is fsynced; a damaged file that
still loads is skipped; pruning leaves nothing behind; and each state that a crash between a save's renames can
leave falls back to the checkpoint before."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from importlib import import_module
from pathlib import Path

import pytest
import torch

checkpoint = import_module("samebits.core.checkpoint")

ORIGIN = {"config_sha256": "c" * 64, "commit": "a" * 40, "uv_lock_sha256": "l" * 64}


def state(value: float, size: int = 3) -> dict[str, object]:
    return {"model": {"weight": torch.full((size,), value)}, "origin": ORIGIN, "rng": [{}]}


def test_the_manifest_holds_the_sha256_of_the_whole_file(tmp_path: Path) -> None:
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=3)
    big = {**state(1.0), "optimizer": {"exp_avg": torch.randn(3_000_000)}}  # 12 MB, over many writes and blocks
    path = directory.save(big, 100)
    assert json.loads((tmp_path / "manifest.json").read_text()) == {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
    }
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("sha256")]


def test_a_checkpoint_folder_written_before_still_loads(tmp_path: Path) -> None:
    """The layout older versions wrote: a torch.save file, its sha256 in manifest.json, its name in `latest`."""
    torch.save({"format": 1, "step": 100, **state(1.0)}, tmp_path / "step_000100.pt")
    digest = hashlib.sha256((tmp_path / "step_000100.pt").read_bytes()).hexdigest()
    (tmp_path / "manifest.json").write_text(json.dumps({"step_000100.pt": digest}))
    (tmp_path / "latest").write_text("step_000100.pt")
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=3)
    assert directory.load_latest()["step"] == 100
    directory.save(state(2.0), 200)
    assert checkpoint.CheckpointDir(tmp_path, keep_last=3).load_latest()["step"] == 200


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
    assert sorted(path.name for path in tmp_path.iterdir()) == ["latest", "manifest.json", "step_000300.pt"]


@pytest.mark.parametrize(
    ("checkpoint_renamed", "manifest_renamed", "latest_renamed"),
    [
        (True, False, False),
        (False, True, False),
        (False, False, True),
        (True, True, False),
        (True, False, True),
        (False, True, True),
    ],  # fmt: skip
)
def test_a_crash_that_kept_some_renames_of_a_save_falls_back(
    tmp_path: Path, checkpoint_renamed: bool, manifest_renamed: bool, latest_renamed: bool
) -> None:
    """The renames of a save share one fsync of the folder: a crash before it may keep any of them."""
    directory = checkpoint.CheckpointDir(tmp_path, keep_last=2)
    for step in (100, 200):
        directory.save(state(float(step)), step)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    directory.save(state(300.0), 300)
    directory.clean()  # waits for the pruned checkpoint to be deleted
    after = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    manifest_then = json.loads(after["manifest.json"])  # as the first manifest write of the save left it
    manifest_then["step_000100.pt"] = json.loads(before["manifest.json"])["step_000100.pt"]
    for path in tmp_path.iterdir():
        path.unlink()
    left = {**before, **({"step_000300.pt": after["step_000300.pt"]} if checkpoint_renamed else {})}
    left |= {"manifest.json": json.dumps(manifest_then).encode()} if manifest_renamed else {}
    left |= {"latest": after["latest"]} if latest_renamed else {}
    for name, data in left.items():
        (tmp_path / name).write_bytes(data)
    restarted = checkpoint.CheckpointDir(tmp_path, keep_last=2)
    restarted.clean()
    assert restarted.load_latest()["step"] == 200
    restarted.save(state(300.0), 300)  # and the run goes on from there
    assert sorted(json.loads((tmp_path / "manifest.json").read_text())) == ["step_000200.pt", "step_000300.pt"]
    assert restarted.load_latest()["step"] == 300
