"""wandb (offline) and MLflow (sqlite) receive each step exactly once, through kill -9 and requeue, and a tracker
whose service fails stops nothing. Real services, real runs: what each tracker holds is read back from its own
store (wandb's run files, MLflow's `search_runs` and metric history) and compared with `metrics.jsonl`."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import RunTraining, wait_for

wandb_files = import_module("samebits.tracking.wandb_files")
from_wandb = import_module("samebits.analysis.from_wandb")
folders = import_module("samebits.analysis.folders")
mlflow_store = import_module("samebits.tracking.mlflow_store")

ALL = "logger=[jsonl,wandb,mlflow]"
SHORT = [
    "trainer.max_steps=60",
    "sched.warmup_steps=5",
    "trainer.log_every=5",
    "trainer.ckpt_every=10",
    "trainer.eval_every=20",
]
CANARY = {"REPRODUCIBILITY_RNG_CANARY": "1"}  # summary.json's rng_sha256 then sees Python's and NumPy's RNGs


def rows(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def series(table: list[dict[str, float]], key: str, step: str = "step") -> list[tuple[int, float]]:
    return [(int(row[step]), row[key]) for row in table if key in row]


def mlflow_runs(runs_dir: Path, main_tag: str) -> list[object]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{runs_dir}/mlflow.db")
    return client.search_runs([e.experiment_id for e in client.search_experiments()], f"tags.main_tag = '{main_tag}'")


def mlflow_series(runs_dir: Path, run_id: str, key: str) -> list[tuple[int, float]]:
    from mlflow import MlflowClient

    history = MlflowClient(f"sqlite:///{runs_dir}/mlflow.db").get_metric_history(run_id, key)
    return sorted((metric.step, metric.value) for metric in history)


def assert_each_step_once_everywhere(runs_dir: Path, run_dir: Path, main_tag: str) -> None:
    logged = rows(run_dir)
    ids = json.loads((run_dir / "trackers.json").read_text())
    in_wandb = wandb_files.history(run_dir / "wandb", ids["wandb"])
    (in_mlflow,) = [run for run in mlflow_runs(runs_dir, main_tag) if run.info.run_name == run_dir.name]
    assert in_mlflow.info.run_id == ids["mlflow"]
    assert in_mlflow.info.status == "FINISHED"
    for key in {key for row in logged for key in row} - {"step"}:
        expected = series(logged, key)
        assert series(in_wandb, key, "global_step") == expected, key
        assert mlflow_series(runs_dir, ids["mlflow"], key) == expected, key


def wandb_steps(runs_dir: Path) -> list[int | None]:
    """The last step of each wandb run under `runs_dir`, read from wandb's files while the run may be writing."""
    return [record.step for record in from_wandb.from_files(runs_dir)]


@dataclass(frozen=True)
class Started:
    process: subprocess.Popen[bytes]
    output: Path

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float) -> None:
        """Wait for `condition`, and stop waiting at once, with the process's output, if the process ends."""
        wait_for(lambda: condition() or self.process.poll() is not None, what, timeout=timeout)
        assert condition(), (
            f"exited with {self.process.returncode} while waiting for {what}:\n{self.output.read_text()[-3000:]}"
        )


@contextlib.contextmanager
def training(runs_dir: Path, data_dir: Path, *overrides: str, env: dict[str, str]) -> Iterator[Started]:
    """A training process in a process group of its own, its output in a file. However the test ends, a failed
    wait included, the group is killed on leaving: no paused run outlives its test. (wandb's service, in its own
    session, exits with the process it serves.)"""
    env = {**os.environ, **env, "RUNS_DIR": str(runs_dir), "DATA_DIR": str(data_dir)}
    command = [sys.executable, "-m", f"{PACKAGE}.train", "trainer.progress_bar=false", *overrides]
    with tempfile.NamedTemporaryFile(prefix="training-", suffix=".log", dir=runs_dir.parent, delete=False) as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True)
    try:
        yield Started(process, Path(out.name))
    finally:
        with contextlib.suppress(ProcessLookupError):  # the group is gone once every process in it has ended
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def paused_at(step: int, marker: Path) -> dict[str, str]:
    return {"REPRODUCIBILITY_PAUSE": f"step:{step}", "REPRODUCIBILITY_PAUSE_MARKER": str(marker), **CANARY}


def test_each_step_reaches_every_tracker_once_through_a_kill_and_a_requeue(
    run_training: RunTraining, data_dir: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    with training(runs, data_dir, ALL, *SHORT, env=paused_at(35, tmp_path / "at35")) as killed:
        killed.wait_for(lambda: (tmp_path / "at35").exists(), "the run to reach step 35", timeout=300)
        # Paused at 35: the checkpoint at 30 is durable, so wandb receives the steps up to 30, and none after.
        killed.wait_for(lambda: wandb_steps(runs) == [30], "wandb to hold the steps up to 30", timeout=120)
        killed.process.send_signal(signal.SIGKILL)  # past the checkpoint at 30: steps 31-35 were never published
        killed.process.wait()
    assert [record.state for record in from_wandb.from_files(runs)] == ["unfinished"]  # it never closed
    with training(runs, data_dir, ALL, *SHORT, env=paused_at(45, tmp_path / "at45")) as requeued:
        requeued.wait_for(lambda: (tmp_path / "at45").exists(), "the resumed run to reach step 45", timeout=300)
        requeued.process.send_signal(signal.SIGTERM)  # as Slurm does before a requeue: save at 45, publish, exit 75
        assert requeued.process.wait(timeout=300) == 75, requeued.output.read_text()[-3000:]
    assert [record.state for record in from_wandb.from_files(runs)] == ["preempted"]
    finished = run_training(runs, ALL, *SHORT, env=CANARY)
    assert finished.returncode == 0, finished.stderr

    (run_dir,) = (runs / "dev").iterdir()
    assert [row["step"] for row in rows(run_dir)] == list(range(5, 61, 5))
    assert_each_step_once_everywhere(runs, run_dir, "dev")
    wandb_id = json.loads((run_dir / "trackers.json").read_text())["wandb"]
    assert len(wandb_files.attempt_files(run_dir / "wandb", wandb_id)) >= 2  # one id, a folder per attempt
    assert len(mlflow_runs(runs, "dev")) == 1
    assert from_wandb.from_files(run_dir / "wandb") == [folders.read(run_dir)]  # the attempts' files, folded

    # The trackers' threads draw from no RNG and change no bit of training.
    alone = run_training(tmp_path / "alone", *SHORT, env=CANARY)
    assert alone.returncode == 0, alone.stderr
    (plain,) = (tmp_path / "alone" / "dev").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert json.loads((plain / "summary.json").read_text()) == summary
    assert rows(plain) == rows(run_dir)


def test_trackers_whose_service_fails_stop_nothing_and_no_secret_is_written(
    run_training: RunTraining, tmp_path: Path, unused_port: int
) -> None:
    secret = f"wandb-key-that-must-never-be-written-{secrets.token_hex(8)}"  # not in this file, nor its diff
    runs = tmp_path / "runs"
    uri, artifacts = f"sqlite:///{runs}/mlflow.db", str(runs / "mlflow-artifacts")
    mlflow_store.prepare(uri, artifacts)
    holder = sqlite3.connect(runs / "mlflow.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the database: MLflow's writes wait 20 s, then fail
    try:
        done = run_training(
            runs,
            ALL,
            "trainer.max_steps=40",
            "sched.warmup_steps=5",
            "logger.wandb.init_timeout_s=5",
            "logger.mlflow.timeout_s=60",  # past MLflow's own 20 s wait on a locked database
            env={"WANDB_API_KEY": secret, "WANDB_BASE_URL": f"http://127.0.0.1:{unused_port}"},
        )
    finally:
        holder.rollback()
        holder.close()
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr  # the run's log goes to stdout
    assert output.count("wandb could not start online") == 1
    assert output.count("tracker mlflow") == 1
    (run_dir,) = (runs / "dev").iterdir()
    assert [row["step"] for row in rows(run_dir)] == list(range(10, 41, 10))
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "finished"
    assert "database is locked" in status["trackers_off"]["mlflow"]
    wandb_id = json.loads((run_dir / "trackers.json").read_text())["wandb"]
    offline = wandb_files.history(run_dir / "wandb", wandb_id)
    assert series(offline, "train/loss", "global_step") == series(rows(run_dir), "train/loss")
    written = [path for path in runs.rglob("*") if path.is_file()]
    assert [path for path in written if secret.encode() in path.read_bytes()] == []
    assert secret not in output


# Secrets in the environment of a run, as a cluster or a CI job sets them: by a secret-looking name, as a URL's
# password, as a token under a plain name. provenance.json keeps them redacted; trackers get no environment. Drawn
# afresh, so that no copy of them (in this file, in a dirty tree's dirty.patch) can be mistaken for a leak.
TOKEN, PASSWORD, GITHUB_TOKEN = secrets.token_hex(12), secrets.token_hex(12), "ghp_" + secrets.token_hex(18)
SECRETS = {
    "MY_SERVICE_TOKEN": TOKEN,
    "DATABASE_URL": f"postgres://trainer:{PASSWORD}@db.example:5432/runs",
    "PLAIN_SETTING": GITHUB_TOKEN,
}
SECRET_PARTS = (TOKEN, PASSWORD, GITHUB_TOKEN)


def test_no_secret_of_the_environment_reaches_a_tracker(run_training: RunTraining, tmp_path: Path) -> None:
    """Read back from each tracker's own store (wandb's records, MLflow's params and tags) and from every file the
    run left: the trackers got the run's config and provenance, and not one secret of its environment."""
    runs = tmp_path / "runs"
    short = ["trainer.max_steps=20", "sched.warmup_steps=5", "trainer.eval_every=10", "trainer.ckpt_every=10"]
    done = run_training(runs, ALL, "logger.wandb.mode=offline", *short, env=SECRETS)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (runs / "dev").iterdir()
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["environment"]["MY_SERVICE_TOKEN"] == "<redacted>"  # provenance.json keeps them redacted

    ids = json.loads((run_dir / "trackers.json").read_text())
    (wandb_file,) = wandb_files.attempt_files(run_dir / "wandb", ids["wandb"])
    kept = {"config": {}, "summary": {}}
    for record in wandb_files.records(wandb_file):
        kind = record.WhichOneof("record_type")
        if kind in ("run", "config"):  # the config comes with the run's start, and with any later update
            kept["config"] |= wandb_files.items((record.run.config if kind == "run" else record.config).update)
        elif kind == "summary":
            kept["summary"] |= wandb_files.items(record.summary.update)
        data = record.SerializeToString()
        assert not [part for part in SECRET_PARTS if part.encode() in data], f"in wandb's {kind} record"
    assert kept["config"]["optim"]["lr"] == 3e-3
    assert kept["summary"]["provenance"]["git"]["commit"] == provenance["git"]["commit"]

    (in_mlflow,) = mlflow_runs(runs, "dev")
    assert in_mlflow.data.tags["commit"] == provenance["git"]["commit"]
    assert in_mlflow.data.params["optim.lr"] == "0.003"
    stored = json.dumps([in_mlflow.data.params, in_mlflow.data.tags, in_mlflow.data.metrics])
    assert [part for part in SECRET_PARTS if part in stored] == [], "in MLflow's params, tags or metrics"

    written = {path: path.read_bytes() for path in runs.rglob("*") if path.is_file()}
    assert [(path, part) for path, data in written.items() for part in SECRET_PARTS if part.encode() in data] == []
