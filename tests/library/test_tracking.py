"""Metrics reach every tracker; each step is logged once; one broken or hung tracker stops nothing."""

from __future__ import annotations

import json
import threading
import time
from importlib import import_module
from pathlib import Path

tracking = import_module("samebits.tracking")
background = import_module("samebits.tracking.background")
jsonl = import_module("samebits.tracking.jsonl")
wandb_files = import_module("samebits.tracking.wandb_files")


def logged_steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def test_jsonl_lines_are_buffered_until_flush(tmp_path: Path) -> None:
    tracker = jsonl.JsonlTracker(tmp_path, "metrics.jsonl")
    tracker.log(10, {"train/loss": 0.5})
    assert not (tmp_path / "metrics.jsonl").exists()
    tracker.flush()
    tracker.log(20, {"train/loss": 0.25})
    tracker.close("finished")
    assert [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [
        {"step": 10, "train/loss": 0.5},
        {"step": 20, "train/loss": 0.25},
    ]


def test_a_restarted_run_drops_lines_past_its_start(tmp_path: Path) -> None:
    first = jsonl.JsonlTracker(tmp_path, "metrics.jsonl")
    for step in (10, 20, 30, 40):
        first.log(step, {"train/loss": 1.0 / step})
    first.close("paused")
    resumed = jsonl.JsonlTracker(tmp_path, "metrics.jsonl", start_step=20)
    assert resumed.rows == [{"step": 10, "train/loss": 0.1}, {"step": 20, "train/loss": 0.05}]
    resumed.close("paused")
    assert logged_steps(tmp_path / "metrics.jsonl") == [10, 20]
    jsonl.JsonlTracker(tmp_path, "metrics.jsonl").close("paused")
    assert logged_steps(tmp_path / "metrics.jsonl") == []


class Broken:
    def record(self, provenance: dict[str, object]) -> None: ...

    def log(self, step: int, metrics: dict[str, float]) -> None:
        raise ConnectionError("service unreachable")

    def flush(self) -> None: ...

    def publish(self, step: int) -> None: ...

    def close(self, state: str) -> None: ...


def test_a_failing_tracker_is_dropped_reported_once_and_the_others_carry_on(tmp_path: Path) -> None:
    reported: list[tuple[str, str]] = []
    fan_out = tracking.Tracking(
        {"broken": Broken(), "jsonl": jsonl.JsonlTracker(tmp_path, "metrics.jsonl")},
        lambda name, why: reported.append((name, why)),
    )
    fan_out.log(10, {"train/loss": 0.5})
    fan_out.log(20, {"train/loss": 0.25})
    fan_out.close("finished")
    assert list(fan_out.trackers) == ["jsonl"]
    assert reported == [("broken", "failed in log: service unreachable")]
    assert logged_steps(tmp_path / "metrics.jsonl") == [10, 20]


class Recording:
    """A service that keeps what it is sent, and can be made to hang on a send."""

    def __init__(self, holds: int = 0) -> None:
        self.holds, self.sent, self.closed = holds, [], threading.Event()
        self.release = threading.Event()
        self.release.set()

    def open(self) -> int:
        return self.holds

    def record(self, provenance: object) -> None: ...

    def send(self, rows: list[dict[str, float]]) -> None:
        self.release.wait()
        self.sent += [int(row["step"]) for row in rows]

    def close(self, state: str) -> None:
        self.closed.set()


def run_info(tmp_path: Path, start_step: int, history: list[int]) -> object:
    rows = tuple({"step": step, "train/loss": 1.0} for step in history)
    return tracking.RunInfo(tmp_path, "run", "dev", ("exploratory",), {}, {}, start_step, rows)


def test_a_service_gets_only_steps_after_what_it_holds_and_only_once_a_checkpoint_covers_them(tmp_path: Path) -> None:
    service = Recording(holds=20)  # a killed attempt sent up to 20; its checkpoint was at 30
    tracker = background.RemoteTracker(service, run_info(tmp_path, 30, [10, 20, 30]), timeout_s=30)
    for step in (40, 50):
        tracker.log(step, {"train/loss": 0.5})
    tracker.publish(40)
    tracker.log(60, {"train/loss": 0.5})
    tracker.close("finished")
    assert service.sent == [30, 40, 50, 60]
    assert service.closed.is_set()


def test_a_service_that_hangs_is_switched_off_after_its_timeout(tmp_path: Path) -> None:
    service = Recording()
    service.release.clear()  # every send waits: a service that stopped answering
    reported: list[tuple[str, str]] = []
    tracker = background.RemoteTracker(service, run_info(tmp_path, 0, []), timeout_s=0.2)
    fan_out = tracking.Tracking({"hung": tracker}, lambda name, why: reported.append((name, why)))
    fan_out.log(10, {"train/loss": 0.5})
    fan_out.publish(10)
    time.sleep(0.5)
    fan_out.log(20, {"train/loss": 0.25})
    assert fan_out.trackers == {}
    assert reported == [("hung", "failed in log: no answer within timeout_s=0.2 s")]
    service.release.set()


def test_the_wandb_file_reader_keeps_what_a_kill_left_whole(tmp_path: Path) -> None:
    import wandb

    run = wandb.init(dir=tmp_path, mode="offline", id="abc123", settings=wandb.Settings(silent=True, console="off"))
    for step in range(1, 201):
        run.log({"train/loss": 1.0 / step, "global_step": step})
    run.finish()
    wandb.teardown()  # only then has wandb's service written every row: finish alone missed some under load
    (path,) = wandb_files.attempt_files(tmp_path / "wandb", "abc123")
    assert [row["global_step"] for row in wandb_files.history(tmp_path / "wandb", "abc123")] == list(range(1, 201))
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) * 2 // 3])  # a kill in the middle of a write
    kept = wandb_files.history(tmp_path / "wandb", "abc123")
    assert 0 < len(kept) < 200
    assert [row["global_step"] for row in kept] == list(range(1, len(kept) + 1))
    assert wandb_files.last_step(tmp_path / "wandb", "abc123") == len(kept)
