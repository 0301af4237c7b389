"""Checkpoints: atomic, checksummed, pruned, and skipped with a warning when damaged."""

from __future__ import annotations

import errno
import json
import logging
import os
import resource
import stat
from importlib import import_module
from pathlib import Path

import pytest
import torch

checkpoint = import_module("samebits.core.checkpoint")
contents = import_module("samebits.core.checkpoint_contents")
files = import_module("samebits.core.files")


ORIGIN = {"config_sha256": "c" * 64, "commit": "a" * 40, "uv_lock_sha256": "l" * 64}


def state(value: float) -> dict[str, object]:
    return {"model": {"weight": torch.full((3,), value)}, "origin": ORIGIN, "rng": [{}]}


def saved(tmp_path: Path, steps: list[int], keep_last: int = 3) -> object:
    directory = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=keep_last)
    for step in steps:
        directory.save(state(float(step)), step)
    return directory


def test_save_writes_a_weights_only_checkpoint_then_a_manifest_that_names_it_the_latest(tmp_path: Path) -> None:
    directory = saved(tmp_path, [100])
    folder = tmp_path / "checkpoints"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["latest"] == "step_000100.pt" and set(manifest["checksums"]) == {"step_000100.pt"}
    loaded = torch.load(folder / "step_000100.pt", weights_only=True)
    assert loaded["step"] == 100 and torch.equal(loaded["model"]["weight"], torch.full((3,), 100.0))
    assert directory.load_latest()["step"] == 100


def test_only_the_last_k_are_kept(tmp_path: Path) -> None:
    saved(tmp_path, [100, 200, 300, 400], keep_last=2)
    names = sorted(p.name for p in (tmp_path / "checkpoints").glob("*.pt"))
    assert names == ["step_000300.pt", "step_000400.pt"]
    assert set(json.loads((tmp_path / "checkpoints" / "manifest.json").read_text())["checksums"]) == set(names)


def test_a_damaged_latest_is_reported_and_the_previous_one_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = saved(tmp_path, [100, 200])
    latest = tmp_path / "checkpoints" / "step_000200.pt"
    latest.write_bytes(latest.read_bytes()[:100])
    with caplog.at_level(logging.WARNING):
        assert directory.load_latest()["step"] == 100
    assert "step_000200.pt fails its xxh3_128 checksum" in caplog.text


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
    assert sorted(json.loads((tmp_path / "checkpoints" / "manifest.json").read_text())["checksums"]) == [
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


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664)])
def test_a_durable_write_gets_the_mode_a_plain_open_would(tmp_path: Path, umask: int, mode: int) -> None:
    previous = os.umask(umask)
    try:
        files.write_json(tmp_path / "config.json", {})
        (tmp_path / "plain.txt").touch()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "config.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode) == mode


def test_resuming_with_another_config_commit_lock_or_world_size_is_refused_in_one_line() -> None:
    checkpointed = {**state(1.0), "step": 300}
    same = contents.Origin(**ORIGIN)
    assert contents.resume_problems(checkpointed, same, world_size=1, allow_code_change=False) == []

    other_config = contents.Origin(**{**ORIGIN, "config_sha256": "d" * 64})
    (changed,) = contents.resume_problems(checkpointed, other_config, 1, allow_code_change=False)
    assert changed.startswith("the checkpoint at step 300 was made with config cccccccccccc, not with this config")
    # New code may add or retire a setting (the run folder's claim compares the shared ones by value)
    assert contents.resume_problems(checkpointed, other_config, 1, allow_code_change=True) == []

    other_code = contents.Origin(**{**ORIGIN, "commit": "b" * 40, "uv_lock_sha256": "m" * 64})
    commit, lock = contents.resume_problems(checkpointed, other_code, world_size=1, allow_code_change=False)
    assert commit.startswith(
        "the checkpoint at step 300 was made by commit aaaaaaaaaaaa, not by this commit bbbbbbbbbbbb"
    )
    assert lock.startswith(
        "the checkpoint at step 300 was made by uv.lock llllllllllll, not by this uv.lock mmmmmmmmmmmm"
    )
    assert "trainer.allow_code_change=true" in commit
    assert contents.resume_problems(checkpointed, other_code, 1, allow_code_change=True) == []

    (ranks,) = contents.resume_problems(checkpointed, same, world_size=2, allow_code_change=False)
    assert ranks == "the checkpoint was made by 1 processes, not 2: resume with as many"


def test_the_final_path_never_holds_a_partial_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = saved(tmp_path, [100])
    folder = tmp_path / "checkpoints"
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    final = folder / "step_000200.pt"
    seen_during_write: list[bool] = []

    def save_then_run_out_of_space(obj: object, out: object) -> None:
        torch_save(obj, out)  # the whole checkpoint is written, but not yet made durable
        seen_during_write.append(final.exists())
        raise RuntimeError("unexpected pos") from OSError(errno.ENOSPC, "No space left on device")

    torch_save = torch.save
    monkeypatch.setattr(checkpoint.torch, "save", save_then_run_out_of_space)
    with pytest.raises(OSError) as failed:
        directory.save(state(2.0), 200)
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(final)
    assert seen_during_write == [False]  # written elsewhere first, then renamed into place
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    assert directory.load_latest()["step"] == 100


def test_a_full_disk_while_saving_is_an_oserror_and_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    directory = saved(tmp_path, [100])
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, limit[1]))  # files may not grow past 10 kB (EFBIG)
    try:
        with pytest.raises(OSError) as failed:
            directory.save({**state(2.0), "big": torch.zeros(100_000)}, 200)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
    assert failed.value.errno == errno.EFBIG
    assert sorted(path.name for path in (tmp_path / "checkpoints").iterdir()) == ["manifest.json", "step_000100.pt"]
    assert directory.load_latest()["step"] == 100


def test_a_damaged_manifest_falls_back_to_the_checkpoints_that_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saved(tmp_path, [100, 200, 300])
    folder = tmp_path / "checkpoints"
    (folder / "manifest.json").write_text('{"step_000100.pt": "trunc')
    (folder / "step_000300.pt").write_bytes(b"garbage")
    directory = checkpoint.CheckpointDir(folder, keep_last=3)
    with caplog.at_level(logging.WARNING):
        directory.clean()  # nothing that loads is taken for an orphan
        assert directory.load_latest()["step"] == 200
    assert "manifest.json is damaged" in caplog.text
    assert (folder / "step_000100.pt").exists() and (folder / "step_000200.pt").exists()
    directory.save(state(4.0), 400)  # the next save writes a sound manifest again
    assert sorted(json.loads((folder / "manifest.json").read_text())["checksums"]) == [
        "step_000100.pt",
        "step_000200.pt",
        "step_000400.pt",
    ]


def as_format_1(folder: Path) -> None:
    """Rewrite a folder's manifest as earlier versions wrote it: flat, its latest named in a file of its own."""
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps(manifest["checksums"]))
    (folder / "latest").write_text(manifest["latest"])


def test_a_damaged_format_1_latest_pointer_is_reported_and_the_newest_checkpoint_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = saved(tmp_path, [100, 200])
    as_format_1(tmp_path / "checkpoints")
    (tmp_path / "checkpoints" / "latest").write_bytes(b"\x00\xffgarbage")
    with caplog.at_level(logging.WARNING):
        assert directory.load_latest()["step"] == 200
    assert "latest is damaged" in caplog.text


def test_a_missing_format_1_latest_pointer_is_reported_and_the_newest_checkpoint_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = saved(tmp_path, [100, 200])
    as_format_1(tmp_path / "checkpoints")
    (tmp_path / "checkpoints" / "latest").unlink()
    with caplog.at_level(logging.WARNING):
        assert directory.load_latest()["step"] == 200
    assert "latest is missing: using the newest checkpoint in the manifest" in caplog.text
