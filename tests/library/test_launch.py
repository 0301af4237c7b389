"""`<package> launch`: a sweep's runs are named as training names them, and each run's plan follows its state.

Submitting through the local backend and a real Slurm cluster is tested end to end by the template's own suite
(tests/test_launch.py there), on a project pushed to a bare remote.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.project import PACKAGE, ROOT

specs = import_module("samebits.launch.specs")
plan = import_module("samebits.launch.plan")
observe = import_module("samebits.launch.observe")
records = import_module("samebits.launch.records")
sweep = import_module("samebits.core.sweep")
composition = import_module("samebits.composition")
run_folder = import_module("samebits.core.run_folder")
lock_holder = import_module("samebits.core.lock_holder")
distributed = import_module("samebits.core.distributed")

SWEEP = [
    "optim.lr=1e-3,0.001,3e-3",  # 1e-3 and 0.001 are one run; 3e-3 is the default
    "optim=adamw,sgd",
    "model.hidden_sizes=[32],[64,64]",
]


def launch_command(runs_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNS_DIR": str(runs_dir)}
    command = [sys.executable, "-m", PACKAGE, "launch", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_each_run_is_named_exactly_as_a_full_composition_names_it() -> None:
    found = specs.expand(SWEEP)
    expected = set()
    for point in sweep.points(SWEEP):
        cfg = composition.composed(point)
        expected.add((cfg.run_name, Path(cfg.paths.run_dir)))
    assert {(spec.name, spec.run_dir) for spec in found} == expected
    assert len(found) == 8  # 2 learning rates x 2 optimizers x 2 widths
    for other in (
        ["experiment=wide_mlp", "seed=0,1"],
        # sched.total_steps follows max_steps; main_tag moves the folder only; stop_at_step names nothing
        ["trainer.max_steps=100,600", "main_tag=dev,ablation", "+trainer.stop_at_step=null,5"],
        ["sched.total_steps=100", "trainer.max_steps=200,600"],  # a given value replaces the interpolation
        ["trainer.max_steps=200,600", "sched.total_steps=100"],
        ["optim.lr=1,2", "trainer.log_every=5"],  # ints into a float setting; a setting outside the identity
    ):
        composed = [composition.composed(point) for point in sweep.points(other)]
        expected = dict.fromkeys((cfg.run_name, Path(cfg.paths.run_dir)) for cfg in composed)
        assert [(spec.name, spec.run_dir) for spec in specs.expand(other)] == list(expected)


def test_a_bad_point_stops_the_plan_before_anything_is_decided(tmp_path: Path) -> None:
    done = launch_command(tmp_path, "--dry-run", "--", "optim.lr=1e-3,-1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: sweep point 2 of 2: optim.lr=-1.0 must be")
    assert not (tmp_path / "dev").exists()


def test_a_dry_run_prints_the_plan_and_submits_nothing(tmp_path: Path) -> None:
    first = launch_command(tmp_path, "--dry-run", "--", "seed=0,1")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].split() == ["action", "run", "state"]
    assert [line.split()[0] for line in lines[1:3]] == ["NEW", "NEW"]
    assert lines[3] == "2 runs: 2 NEW, 0 RELAUNCH, 0 SKIP"
    assert lines[4].startswith("dry run: nothing submitted")
    assert not any(path.name != ".launch" for path in tmp_path.iterdir())  # no run folder was made

    finished = tmp_path / lines[1].split()[1]
    finished.mkdir(parents=True)
    (finished / "status.json").write_text(json.dumps({"state": "finished", "step": 600}))
    again = launch_command(tmp_path, "--dry-run", "--", "seed=0,1")
    assert [line.split()[0] for line in again.stdout.splitlines()[1:3]] == ["SKIP", "NEW"]
    assert again.stdout.splitlines()[1].endswith("  finished")


def test_a_main_tag_without_a_note_gets_a_warning(tmp_path: Path) -> None:
    done = launch_command(tmp_path, "--dry-run", "--", "main_tag=no-note-yet", "seed=0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("warning: main_tag 'no-note-yet' has no note")
    assert "configs/tags.yaml" in done.stdout.splitlines()[0]
    noted = launch_command(tmp_path, "--dry-run", "--", "main_tag=dev", "seed=0")
    assert "warning" not in noted.stdout


def test_the_launcher_makes_a_new_mlflow_store_once_before_it_submits(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("RUNS_DIR", str(tmp_path))
    command = import_module("samebits.launch.command")
    found = specs.expand(["logger=[jsonl,mlflow]", "seed=0,1", "main_tag=a,b"])
    assert {spec.mlflow_store for spec in found} == {
        (f"sqlite:///{tmp_path}/mlflow.db", f"{tmp_path}/mlflow-artifacts")
    }
    command._prepare_mlflow_stores(found)
    tables = sqlite3.connect(tmp_path / "mlflow.db").execute("SELECT name FROM sqlite_master WHERE type='table'")
    assert {"experiments", "runs", "metrics", "params", "tags"} <= {name for (name,) in tables}
    assert all(spec.mlflow_store is None for spec in specs.expand(["seed=0,1"]))


def test_launch_refuses_an_unpushed_project_in_one_line(tmp_path: Path) -> None:
    done = launch_command(tmp_path, "--", "seed=0")
    if done.returncode == 0:
        pytest.skip("this checkout is clean and pushed: nothing to refuse")
    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "dev").exists()


def seen(state: str, **extra: object) -> object:
    return observe.Observed(state, extra.get("step", 0), str(extra.get("reason", "")), None,
                            extra.get("record"), extra.get("live"), 0)  # fmt: skip


@pytest.mark.parametrize(
    ("state", "extra", "action"),
    [
        ("finished", {}, "SKIP"),
        ("running", {}, "SKIP"),
        ("pending", {"record": {"backend": "slurm", "job_id": "7_1"}, "live": True}, "SKIP"),
        ("queued", {"record": {"backend": "local"}, "live": True}, "SKIP"),
        ("failed", {"reason": "Diverged: loss is nan at step 7"}, "RELAUNCH"),
        ("preempted", {"step": 20}, "RELAUNCH"),
        ("lost", {"step": 20}, "RELAUNCH"),
        ("interrupted", {}, "RELAUNCH"),
        ("preempted", {"record": {"backend": "slurm", "job_id": "7_1"}, "live": None}, "SKIP"),  # squeue failed
        ("lost", {"record": {"backend": "pbs", "job_id": "12.server"}, "live": None}, "SKIP"),  # any backend alike
    ],
)
def test_the_plan_follows_the_state(state: str, extra: dict, action: str) -> None:
    assert plan.decide(seen(state, **extra))[0] == action
    assert plan.decide(None) == ("NEW", "new", False)


@pytest.mark.parametrize("state", ["preempted", "lost", "failed"])
def test_a_run_someone_else_launched_is_relaunched_only_with_force(state: str) -> None:
    """In a shared runs folder, their job may be alive where our squeue cannot see it (Slurm's PrivateData)."""
    theirs = seen(state, step=20, record={"backend": "slurm", "job_id": "7_1", "user": "someone-else"}, live=False)
    action, why, _ = plan.decide(theirs)
    assert (action, why) == ("SKIP", f"{state}: someone else's (launched by someone-else): --force relaunches it")
    assert plan.decide(theirs, force=True)[0] == "RELAUNCH"
    ours = seen(state, step=20, record={"backend": "slurm", "job_id": "7_1", "user": records.this_user()}, live=False)
    assert plan.decide(ours)[0] == "RELAUNCH"


def test_squeue_is_asked_for_the_jobs_of_everyone_who_launched_a_run_here() -> None:
    slurm = import_module("samebits.launch.backends.slurm")
    assert slurm.squeue_command({"bob", "alice"})[-1] == "--user=alice,bob"


def test_retry_failed_submits_no_new_run_and_force_starts_over() -> None:
    assert plan.decide(None, retry_failed=True)[0] == "SKIP"
    assert plan.decide(seen("failed"), retry_failed=True)[0] == "RELAUNCH"
    assert plan.decide(seen("finished"), force=True) == ("RELAUNCH", "finished: --force starts it over", True)
    assert plan.decide(seen("running"), force=True)[0] == "SKIP"  # never the same run twice


def write_status(run_dir: Path, state: str, age: timedelta, host: str) -> None:
    run_dir.mkdir(parents=True)
    updated = (datetime.now(UTC) - age).isoformat(timespec="seconds")
    (run_dir / "status.json").write_text(json.dumps({"state": state, "step": 30, "updated_at": updated}))
    (run_dir / "run.lock").write_text(f"pid 1 on {host} since {updated}\n")


def test_a_run_on_another_machine_is_lost_once_its_heartbeat_is_stale(tmp_path: Path) -> None:
    backends = observe.Backends()
    write_status(tmp_path / "fresh", "running", timedelta(seconds=30), "elsewhere")
    write_status(tmp_path / "stale", "running", timedelta(minutes=10), "elsewhere")
    assert observe.observe(tmp_path / "fresh", backends).state == "running"
    assert observe.observe(tmp_path / "stale", backends).state == "lost"


def test_a_local_job_that_ended_before_training_is_failed_with_its_reason(tmp_path: Path) -> None:
    run_dir = tmp_path / "dev" / "refused"
    run_dir.mkdir(parents=True)
    record = {"backend": "local", "state": "ended", "exit_code": 2, "job_id": f"{socket.gethostname()}:1"}
    (run_dir / "launch.json").write_text(json.dumps(record))
    (run_dir / "job.log").write_text("error: trainer.device=cuda but no CUDA device is visible\n")
    found = observe.observe(run_dir, observe.Backends())
    assert found.state == "failed"
    assert found.reason == (
        "its job ended with exit code 2 before training started: "
        "error: trainer.device=cuda but no CUDA device is visible"
    )
    assert plan.decide(found)[0] == "RELAUNCH"

    # A relaunch of a preempted run that ended before its attempt started: its status is older than the job.
    (run_dir / "status.json").write_text(
        json.dumps({"state": "preempted", "step": 40, "updated_at": "2026-01-01T00:00:00+00:00"})
    )
    (run_dir / "launch.json").write_text(json.dumps(record | {"submitted_at": "2026-01-01T00:05:00+00:00"}))
    again = observe.observe(run_dir, observe.Backends())
    assert (again.state, again.step) == ("failed", 40) and again.reason.startswith("its job ended with exit code 2")


def test_the_heartbeat_rewrites_status_while_running_and_stops_after(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(lock_holder, "HEARTBEAT_S", 0.3)
    folder = run_folder.RunFolder(tmp_path, distributed.Context(rank=0, local_rank=0, world_size=1))
    folder.record("running", 10)
    first = json.loads((tmp_path / "status.json").read_text())
    time.sleep(1.6)  # updated_at has whole seconds
    beat = json.loads((tmp_path / "status.json").read_text())
    assert (beat["state"], beat["step"]) == ("running", 10) and beat["updated_at"] > first["updated_at"]
    folder.record("finished", 20)
    time.sleep(1.0)
    final = json.loads((tmp_path / "status.json").read_text())
    assert (final["state"], final["step"]) == ("finished", 20)


def test_force_sets_the_old_folder_aside_whole_and_leases_a_fresh_one(tmp_path: Path) -> None:
    command = import_module("samebits.launch.command")
    records = import_module("samebits.launch.records")
    run_dir = tmp_path / "dev" / "done"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text('{"params_sha256": "abc"}')
    fresh = command._start_over(records.Lease.take(run_dir))
    try:
        (aside,) = [path for path in (tmp_path / "dev").iterdir() if path.name.startswith("done.replaced-")]
        assert (aside / "summary.json").read_text() == '{"params_sha256": "abc"}'  # nothing lost
        assert fresh.run_dir == run_dir and run_dir.is_dir() and not (run_dir / "summary.json").exists()
        assert records.Lease.take(run_dir) is None  # this launcher holds the fresh folder
    finally:
        fresh.release()


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


def test_a_launcher_under_its_own_lease_sees_a_killed_local_job_as_lost(tmp_path: Path) -> None:
    """The launcher holds the run's lease when it looks again; a dead job must not hide behind that hold."""
    records = import_module("samebits.launch.records")
    processes = import_module("samebits.core.processes")
    run_dir = tmp_path / "dev" / "killed"
    run_dir.mkdir(parents=True)
    updated = datetime.now(UTC).isoformat(timespec="seconds")
    (run_dir / "status.json").write_text(json.dumps({"state": "running", "step": 500, "updated_at": updated}))
    pid = dead_pid()
    (run_dir / "run.lock").write_text(f"pid {pid} on {socket.gethostname()} since {updated}\n")
    job = {"backend": "local", "state": "started", "job_id": f"{socket.gethostname()}:{pid}"}
    (run_dir / "launch.json").write_text(json.dumps(job))
    lease = records.Lease.take(run_dir)
    try:
        found = observe.observe(run_dir, observe.Backends())
        assert (found.state, found.live) == ("lost", False)
        assert plan.decide(found) == ("RELAUNCH", "lost: resumes from step 500", False)
        # After a reboot the pid may name another process: its start time tells them apart.
        alive = job | {"job_id": f"{socket.gethostname()}:{os.getpid()}", "job_token": "another-boot/12345"}
        (run_dir / "launch.json").write_text(json.dumps(alive))
        assert observe.observe(run_dir, observe.Backends()).state == "lost"
        ours = alive | {"job_token": processes.start_token()}  # this process stands in for a live job
        (run_dir / "launch.json").write_text(json.dumps(ours))
        assert observe.observe(run_dir, observe.Backends()).state == "pending"  # alive; training not started
    finally:
        lease.release()


def test_the_local_queue_starts_no_more_than_max_concurrent(tmp_path: Path) -> None:
    """One live job and four queued runs at most two at once: advancing the queue starts exactly one."""
    local = import_module("samebits.launch.local")
    processes = import_module("samebits.core.processes")
    runs = tmp_path / "runs"
    environment = {"RUNS_DIR": str(runs), "DATA_DIR": str(tmp_path / "data"), "JOB_CACHE": str(tmp_path / "cache")}
    base = {"backend": "local", "repo": str(tmp_path / "no-such-repo"), "commit": "0" * 40, "overrides": [],
            "environment": environment, "max_concurrent": 2, "submitted_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    live = base | {"state": "started", "job_id": f"{socket.gethostname()}:{os.getpid()}"}
    live["job_token"] = processes.start_token()
    for index, record in enumerate([live] + [base | {"state": "queued", "position": i} for i in range(4)]):
        run_dir = runs / "dev" / f"run{index}"
        run_dir.mkdir(parents=True)
        (run_dir / "launch.json").write_text(json.dumps(record | {"run_name": run_dir.name}))
    (runs / ".launch").mkdir()
    started = local.advance(runs)  # the jobs it starts fail at once (no such repository) and advance in turn
    assert [path.name for path in started] == ["run1"]
    assert json.loads((runs / "dev" / "run1" / "launch.json").read_text())["state"] == "started"
    wait_until_no_job_runs(runs)


def wait_until_no_job_runs(runs: Path) -> None:
    """Every job the queue started has ended (each fails at once here), so that none outlives the test."""
    local = import_module("samebits.launch.local")
    deadline = time.monotonic() + 60
    while True:
        found = [json.loads(path.read_text()) for path in runs.glob("dev/*/launch.json")]
        ours = f"{socket.gethostname()}:{os.getpid()}"  # the stand-in for a live job
        jobs = [record for record in found if record.get("state") == "started" and record["job_id"] != ours]
        if not any(local.job_alive(record) for record in jobs) and not any(r["state"] == "queued" for r in found):
            return
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
