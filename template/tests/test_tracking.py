"""Metrics reach every tracker; each step is logged once; one broken tracker stops nothing."""

from __future__ import annotations

import json
from importlib import import_module
from pathlib import Path

from conftest import PACKAGE

tracking = import_module(f"{PACKAGE}.tracking")
jsonl = import_module(f"{PACKAGE}.tracking.jsonl")


def logged_steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def test_jsonl_lines_are_buffered_until_flush(tmp_path: Path) -> None:
    tracker = jsonl.JsonlTracker(tmp_path, "metrics.jsonl")
    tracker.log(10, {"train/loss": 0.5})
    assert not (tmp_path / "metrics.jsonl").exists()
    tracker.flush()
    tracker.log(20, {"train/loss": 0.25})
    tracker.close()
    assert [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [
        {"step": 10, "train/loss": 0.5},
        {"step": 20, "train/loss": 0.25},
    ]


def test_a_restarted_run_drops_lines_past_its_start(tmp_path: Path) -> None:
    first = jsonl.JsonlTracker(tmp_path, "metrics.jsonl")
    for step in (10, 20, 30, 40):
        first.log(step, {"train/loss": 1.0 / step})
    first.close()
    jsonl.JsonlTracker(tmp_path, "metrics.jsonl", start_step=20).close()
    assert logged_steps(tmp_path / "metrics.jsonl") == [10, 20]
    jsonl.JsonlTracker(tmp_path, "metrics.jsonl").close()
    assert logged_steps(tmp_path / "metrics.jsonl") == []


class Broken:
    def record(self, provenance: dict[str, object]) -> None: ...

    def log(self, step: int, metrics: dict[str, float]) -> None:
        raise ConnectionError("service unreachable")

    def flush(self) -> None: ...

    def close(self) -> None: ...


def test_a_failing_tracker_is_dropped_and_the_others_carry_on(tmp_path: Path) -> None:
    fan_out = tracking.Tracking({"broken": Broken(), "jsonl": jsonl.JsonlTracker(tmp_path, "metrics.jsonl")})
    fan_out.log(10, {"train/loss": 0.5})
    fan_out.log(20, {"train/loss": 0.25})
    fan_out.close()
    assert list(fan_out.trackers) == ["jsonl"]
    assert logged_steps(tmp_path / "metrics.jsonl") == [10, 20]
