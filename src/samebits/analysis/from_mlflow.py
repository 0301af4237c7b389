"""The MLflow source: the same run records as the run folders give, rebuilt from an MLflow store alone.

For runs whose folders are gone (another machine, a cleaned disk), and as the bulk export MLflow's UI lacks. The
MLflow tracker (tracking/mlflow_tracker.py) logs what a record needs: tags `main_tag`, `tags`, `commit` and
`config_sha256`, the identity settings as params (JSON text, strings as they are), and every metric by step.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import UsageError
from ..tracking.mlflow_store import sqlite_path
from .records import RunRecord

STATES = {"FINISHED": "finished", "RUNNING": "running", "KILLED": "stopped", "FAILED": "failed"}
PAGE = 1000


def records(tracking_uri: str, main_tag: str | None = None) -> list[RunRecord]:
    """One record per MLflow run made by this project's tracker (it has a `main_tag` tag), oldest first."""
    if (path := sqlite_path(tracking_uri)) is not None and not path.exists():
        raise UsageError(f"no MLflow store at {path}: train with logger=[jsonl,mlflow], or pass --mlflow-uri")
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    query = f"tags.main_tag = '{main_tag}'" if main_tag else "tags.main_tag != ''"
    found, token = [], None
    while True:  # search_runs pages its answers
        page = client.search_runs(experiments, query, max_results=PAGE, order_by=["start_time ASC"], page_token=token)
        found += page
        if not (token := page.token):
            break
    return [_record(client, run) for run in found]


def _record(client: Any, run: Any) -> RunRecord:
    tags, metrics = run.data.tags, dict(run.data.metrics)
    histories = (client.get_metric_history(run.info.run_id, key) for key in metrics)
    return RunRecord(
        name=run.info.run_name,
        main_tag=tags["main_tag"],
        tags=tuple(tag for tag in tags.get("tags", "").split(",") if tag),
        state=STATES.get(run.info.status, run.info.status.lower()),
        commit=tags.get("commit"),
        config_sha256=tags.get("config_sha256"),
        settings={key: parameter(value) for key, value in run.data.params.items()},
        metrics=metrics,
        step=max((metric.step for history in histories for metric in history), default=None),
    )


def parameter(text: str) -> object:
    """A param as the tracker wrote it: JSON for numbers, booleans, lists and null; a string as it is."""
    try:
        return json.loads(text)
    except ValueError:
        return text
