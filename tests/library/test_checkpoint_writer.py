"""The background writer: the copy a step hands over is what reaches the disk, whatever training does meanwhile;
one write in flight; a failed write is raised where the loop waits, and the checkpoint before it is kept."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest
import torch
from torch import nn

best = import_module("samebits.core.best")
checkpoint = import_module("samebits.core.checkpoint")
checkpoint_manifest = import_module("samebits.core.checkpoint_manifest")
checkpointer = import_module("samebits.core.checkpointer")
distributed = import_module("samebits.core.distributed")
run_folder = import_module("samebits.core.run_folder")
writer = import_module("samebits.core.checkpoint_writer")

ORIGIN = {"config_sha256": "c" * 64, "commit": "a" * 40, "uv_lock_sha256": "l" * 64}


def latest(folder: Path) -> str | None:
    return checkpoint_manifest.read(folder).latest


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
    background.start(writer.copied({"model": model.state_dict(), "origin": ORIGIN, "rng": [{}]}), 7, best=None)
    train(model, optimizer, steps=20)  # while the write may still be going on
    written = background.collect()
    assert (written.step, written.best, written.name) == (7, None, "step_000007.pt")
    assert background.collect() is None and not background.finished()  # nothing left in flight
    loaded = folder.load_latest()
    assert loaded is not None and loaded["step"] == 7
    assert all(torch.equal(loaded["model"][key], at_step[key]) for key in at_step)


def test_a_failed_write_is_raised_where_the_loop_collects_it_and_keeps_the_checkpoint_before(tmp_path: Path) -> None:
    folder = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=3)
    background = writer.BackgroundWriter(folder)
    background.start({"model": {"weight": torch.ones(3)}, "origin": ORIGIN, "rng": [{}]}, 5, best=None)
    background.collect()
    (tmp_path / "checkpoints" / "step_000010.pt").mkdir()  # the file cannot be renamed into place
    background.start({"model": {"weight": torch.zeros(3)}, "origin": ORIGIN, "rng": [{}]}, 10, best=0.9)
    with pytest.raises(OSError):
        background.collect()
    assert latest(tmp_path / "checkpoints") == "step_000005.pt"
    loaded = folder.load_latest()
    assert loaded is not None and loaded["step"] == 5 and torch.equal(loaded["model"]["weight"], torch.ones(3))


def test_only_one_write_is_in_flight(tmp_path: Path) -> None:
    background = writer.BackgroundWriter(checkpoint.CheckpointDir(tmp_path, keep_last=1))
    background.start({"model": {}, "origin": ORIGIN, "rng": [{}]}, 1, best=None)
    with pytest.raises(AssertionError, match="collect the write in flight"):
        background.start({"model": {}, "origin": ORIGIN, "rng": [{}]}, 2, best=None)
    assert background.collect().step == 1 and latest(tmp_path) == "step_000001.pt"


def test_the_copy_keeps_what_torch_save_would_keep_of_the_live_state() -> None:
    """Tied weights share one copy, as they share one storage in a file; a module's state dict keeps its type and
    its `_metadata` (each module's version, which load_state_dict passes to the modules)."""
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight  # tied, as the char transformer ties its head to its embedding
    taken = writer.copied({"model": model.state_dict()})["model"]
    assert taken["0.weight"] is taken["1.weight"]
    assert type(taken) is type(model.state_dict()) and taken._metadata == model.state_dict()._metadata
    restored = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    restored.load_state_dict(taken)
    assert torch.equal(restored[1].weight, model[0].weight)


def test_a_loop_that_fails_first_waits_for_the_write_in_flight_and_counts_it(tmp_path: Path) -> None:
    """An exiting interpreter would stop the write halfway; the run's failure must name the checkpoint it has."""
    folder = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=3)
    run = run_folder.RunFolder(tmp_path, distributed.context_from_env())
    tracker = best.BestTracker(folder.folder, "val/acc", "max", resumed_step=0)
    published: list[int] = []
    unused = None  # what only a save reads: the live state, its origin, the divergence watch
    saver = checkpointer.Checkpointer(folder, unused, unused, 10, torch.device("cpu"), run, tracker, unused,
                                      lambda: None, published.append)  # fmt: skip
    assert tracker.improved_by({"val/acc": 0.5})
    saver.writer.start(writer.copied({"model": {"w": torch.ones(2)}, "origin": ORIGIN, "rng": [{}]}), 10, 0.5)
    assert tracker.improved_by({"val/acc": 0.9})  # a later evaluation beats it while it is being written
    with pytest.raises(RuntimeError, match="the loop failed"), saver.finishing_writes():
        raise RuntimeError("the loop failed")
    assert published == [10] and run.step == 10
    assert latest(folder.folder) == "step_000010.pt"
    assert best.read(folder.folder) == {"checkpoint": "step_000010.pt", "step": 10, "metric": "val/acc",
                                        "mode": "max", "value": 0.5}  # fmt: skip
