"""MLflow: one MLflow run per run folder, in the experiment named after its main tag (`logger=[jsonl,mlflow]`).

- The store is local sqlite by default (tracking/mlflow_store.py); any tracking URI works.
- MLflow chooses run ids, so the id is kept in `<run folder>/trackers.json` and every attempt reopens that run.
- Metrics go in `log_batch` calls of whole rows, at most 1,000 values each, which the store writes in one
  transaction: on reopening, the highest step it holds is exactly where the run's MLflow record ends, and
  nothing is sent twice (MLflow metrics are append-only).
- Tags: `main_tag`, `purpose`, `run_folder`, the commit and the config hash, so that runs are found with
  `search_runs(filter_string="tags.main_tag = '...'")`. Params: the identity settings, by dotted key, as JSON
  text (strings as they are).
- If the store lost the run (a new database), a new MLflow run is made and sent the whole of `metrics.jsonl`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.states import AttemptState
from . import RunInfo
from .background import RemoteTracker, Row, store_id, stored_id
from .mlflow_store import prepare

MAX_METRICS, MAX_PARAMS, MAX_PARAM_LENGTH = 1000, 100, 6000  # MLflow's limits per log_batch call and per value


@dataclass
class MlflowConfig:
    _target_: str = "samebits.tracking.mlflow_tracker.MlflowTracker"
    tracking_uri: str = "sqlite:///${paths.runs_dir}/mlflow.db"
    artifact_location: str = "${paths.runs_dir}/mlflow-artifacts"
    experiment: str = "${main_tag}"
    timeout_s: float = 120.0


def MlflowTracker(  # noqa: N802  (built by instantiate like a class)
    run: RunInfo, tracking_uri: str, artifact_location: str, experiment: str, timeout_s: float = 120.0
) -> RemoteTracker:
    return RemoteTracker(MlflowService(run, tracking_uri, artifact_location, experiment), run, timeout_s)


class MlflowService:
    def __init__(self, run: RunInfo, tracking_uri: str, artifact_location: str, experiment: str) -> None:
        self.info, self.tracking_uri = run, tracking_uri
        self.artifact_location, self.experiment = artifact_location, experiment
        self.client: Any = None
        self.run_id = ""

    def open(self) -> int:
        from mlflow import MlflowClient
        from mlflow.entities import Param
        from mlflow.exceptions import MlflowException

        prepare(self.tracking_uri, self.artifact_location)
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        if run_id := stored_id(self.info.run_dir, "mlflow"):
            try:
                found = self.client.get_run(run_id)
            except MlflowException:  # not in this store (a new database): start a new record
                found = None
            if found is not None:
                self.run_id = run_id
                self.client.update_run(run_id, status="RUNNING")
                return self._last_step(found.data.metrics)
        made = self.client.create_run(self._experiment_id(), run_name=self.info.name, tags=self._tags())
        self.run_id = made.info.run_id
        store_id(self.info.run_dir, "mlflow", self.run_id)
        params = [Param(key, as_text(value)[:MAX_PARAM_LENGTH]) for key, value in sorted(self.info.settings.items())]
        for start in range(0, len(params), MAX_PARAMS):
            self.client.log_batch(self.run_id, params=params[start : start + MAX_PARAMS])
        return 0

    def record(self, provenance: Mapping[str, Any]) -> None:
        git, run = provenance.get("git", {}), provenance.get("run", {})
        tags = {"commit": git.get("commit"), "dirty": git.get("dirty"), "config_sha256": run.get("config_sha256")}
        for key, value in tags.items():
            if value is not None:
                self.client.set_tag(self.run_id, key, str(value))

    def send(self, rows: list[Row]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch: list[Any] = []
        for row in rows:
            values = [Metric(key, float(value), now, int(row["step"])) for key, value in row.items() if key != "step"]
            if batch and len(batch) + len(values) > MAX_METRICS:
                self.client.log_batch(self.run_id, metrics=batch)
                batch = []
            batch += values
        if batch:
            self.client.log_batch(self.run_id, metrics=batch)

    def close(self, state: AttemptState) -> None:
        self.client.set_terminated(self.run_id, "FINISHED" if state == "finished" else "KILLED")

    def _experiment_id(self) -> str:
        from mlflow.exceptions import MlflowException

        if (found := self.client.get_experiment_by_name(self.experiment)) is not None:
            return str(found.experiment_id)
        try:
            return str(self.client.create_experiment(self.experiment, artifact_location=self.artifact_location))
        except MlflowException:
            if (found := self.client.get_experiment_by_name(self.experiment)) is None:
                raise  # not a race with another run that made it first: a real failure
            return str(found.experiment_id)

    def _tags(self) -> dict[str, str]:
        purpose = [tag for tag in self.info.tags if tag in ("exploratory", "candidate")]
        return {
            "main_tag": self.info.main_tag,
            "purpose": ",".join(purpose),
            "tags": ",".join(self.info.tags),
            "run_folder": str(self.info.run_dir),
        }

    def _last_step(self, latest: Mapping[str, float]) -> int:
        histories = (self.client.get_metric_history(self.run_id, key) for key in latest)
        return max((metric.step for history in histories for metric in history), default=0)


def as_text(value: object) -> str:
    """A param's text: JSON, so that `collect --from mlflow` reads back numbers, lists and null; strings as they are."""
    return value if isinstance(value, str) else json.dumps(value)
