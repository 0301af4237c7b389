"""The background writer: the copy a step hands over is what reaches the disk, whatever training does meanwhile;
one write in flight; a failed write is raised where the loop waits, and the checkpoint before it is kept."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest
import torch
from torch import nn

checkpoint = import_module("samebits.core.checkpoint")
writer = import_module("samebits.core.checkpoint_writer")

ORIGIN = {"config_sha256": "c" * 64, "commit": "a" * 40, "uv_lock_sha256": "l" * 64}


def trained_parts() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Linear(64, 64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    train(model, optimizer, steps=1)  # AdamW's moments and step counts exist from here on
    return model, optimizer


def train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(8, 64)).square().mean().backward()
        optimizer.step()


def test_the_copy_shares_no_memory_with_the_live_state_and_keeps_its_values(tmp_path: Path) -> None:
    model, optimizer = trained_parts()
    live = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": {"epoch": 1, "batch": [2]}}
    taken = writer.copied(live)
    before = {key: tensor.clone() for key, tensor in taken["model"].items()}
    moments = taken["optimizer"]["state"][0]["exp_avg"].clone()
    train(model, optimizer, steps=3)
    live["data"]["batch"].append(3)
    assert all(torch.equal(taken["model"][key], before[key]) for key in before)
    assert torch.equal(taken["optimizer"]["state"][0]["exp_avg"], moments)
    assert not torch.equal(model.weight, before["weight"])  # training did change the live ones
    assert taken["data"] == {"epoch": 1, "batch": [2]}
    live_pointers = {tensor.data_ptr() for tensor in model.state_dict().values()}
    assert live_pointers.isdisjoint(tensor.data_ptr() for tensor in taken["model"].values())


def test_a_write_in_flight_saves_the_state_of_its_step_while_training_goes_on(tmp_path: Path) -> None:
    model, optimizer = trained_parts()
    folder = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=3)
    background = writer.BackgroundWriter(folder)
    at_step = {key: tensor.clone() for key, tensor in model.state_dict().items()}
    background.start(writer.copied({"model": model.state_dict(), "origin": ORIGIN, "rng": [{}]}), 7, best=False)
    train(model, optimizer, steps=20)  # while the write may still be going on
    written = background.collect()
    assert (written.step, written.best, written.name) == (7, False, "step_000007.pt")
    assert background.collect() is None and not background.finished()  # nothing left in flight
    loaded = folder.load_latest()
    assert loaded is not None and loaded["step"] == 7
    assert all(torch.equal(loaded["model"][key], at_step[key]) for key in at_step)


def test_a_failed_write_is_raised_where_the_loop_collects_it_and_keeps_the_checkpoint_before(tmp_path: Path) -> None:
    folder = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=3)
    background = writer.BackgroundWriter(folder)
    background.start({"model": {"weight": torch.ones(3)}, "origin": ORIGIN, "rng": [{}]}, 5, best=False)
    background.collect()
    (tmp_path / "checkpoints" / "step_000010.pt").mkdir()  # the file cannot be renamed into place
    background.start({"model": {"weight": torch.zeros(3)}, "origin": ORIGIN, "rng": [{}]}, 10, best=True)
    with pytest.raises(OSError):
        background.collect()
    assert (tmp_path / "checkpoints" / "latest").read_text() == "step_000005.pt"
    loaded = folder.load_latest()
    assert loaded is not None and loaded["step"] == 5 and torch.equal(loaded["model"]["weight"], torch.ones(3))


def test_only_one_write_is_in_flight(tmp_path: Path) -> None:
    background = writer.BackgroundWriter(checkpoint.CheckpointDir(tmp_path, keep_last=1))
    background.start({"model": {}, "origin": ORIGIN, "rng": [{}]}, 1, best=False)
    with pytest.raises(AssertionError, match="collect the write in flight"):
        background.start({"model": {}, "origin": ORIGIN, "rng": [{}]}, 2, best=False)
    assert background.collect().step == 1 and (tmp_path / "latest").read_text() == "step_000001.pt"
