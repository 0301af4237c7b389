"""`<package> launch` end to end, on a generated project pushed to a bare remote: four launchers at once on the
local backend, and a sweep on a real one-node Slurm cluster that is requeued, moved past by main, relaunched.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import slurm_cluster
from helpers.generation import DEFAULT_PACKAGE
from helpers.git import IDENTITY, git

pytestmark = pytest.mark.slow

SHORT = ["trainer.max_steps=40", "trainer.eval_every=20", "trainer.ckpt_every=10", "sched.warmup_steps=2"]
QUIET = ["trainer.progress_bar=false"]


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A default project whose Slurm settings fit a 2-CPU test node, pushed to a bare remote."""
    return slurm_cluster.pushed_project(tmp_path_factory.mktemp("launch"))


def environment(pushed: dict[str, Path], runs: str, base: dict[str, str] | None = None) -> dict[str, str]:
    return {**(base or os.environ), "RUNS_DIR": str(pushed["root"] / runs), "JOB_CACHE": str(pushed["root"] / "cache")}


def launch(pushed: dict, runs: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "launch", *args],
        cwd=pushed["project"],
        env=environment(pushed, runs, env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def plan_rows(output: str) -> dict[str, str]:
    """run -> action, from a printed plan."""
    return {line.split()[1]: line.split()[0] for line in output.splitlines() if re.match(r"(NEW|RELAUNCH|SKIP) ", line)}


def wait_until(ready, what: str, timeout: float = 900, cluster: object = None) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{cluster.logs() if cluster else ''}"
        time.sleep(1)


def state(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "status.json").read_text())["state"]
    except (OSError, ValueError, KeyError):
        return None


def metric_steps(run_dir: Path) -> list[int]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines if "train/loss" in json.loads(line)]


def test_four_launchers_at_once_submit_each_run_once(pushed: dict[str, Path]) -> None:
    sweep = [*SHORT, *QUIET, "seed=0,1,2,3,4", "optim.lr=1e-3,2e-3"]
    env = environment(pushed, "concurrent")
    launcher = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "launch", "--max-concurrent", "3", "--"]
    started = [
        subprocess.Popen(
            [*launcher, *sweep],
            cwd=pushed["project"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=600) for process in started]
    assert all(process.returncode == 0 for process in started), outputs
    queued = [int(found[1]) for out, _ in outputs if (found := re.search(r"^queued (\d+) run", out, re.MULTILINE))]
    assert sum(queued) == 10, [out for out, _ in outputs]
    run_dirs = [path for path in (pushed["root"] / "concurrent" / "dev").iterdir() if path.is_dir()]
    assert len(run_dirs) == 10
    wait_until(lambda: all(state(run_dir) == "finished" for run_dir in run_dirs), "10 finished runs")
    for run_dir in run_dirs:
        record = json.loads((run_dir / "launch.json").read_text())
        assert record["launches"] == 1 and record["user"] == pwd.getpwuid(os.getuid()).pw_name  # who launched it
        assert not (run_dir / "attempts.jsonl").exists()  # trained in one attempt: never started twice
        assert metric_steps(run_dir) == list(range(10, 41, 10))
    again = launch(pushed, "concurrent", "--", *sweep)
    assert set(plan_rows(again.stdout).values()) == {"SKIP"} and "nothing to submit" in again.stdout


KILL_SWEEP = [*SHORT, *QUIET, "seed=0,1,2"]


@pytest.fixture(scope="module")
def twins(pushed: dict[str, Path]) -> Path:
    """KILL_SWEEP launched and left alone: each run's uninterrupted twin (waited for where they are compared)."""
    launch(pushed, "twins", "--max-concurrent", "2", "--", *KILL_SWEEP)
    return pushed["root"] / "twins" / "dev"


def kill_job(run_dir: Path) -> None:
    """kill -9 the whole process group of a run's local job (its launch.local_job, job.sh, uv and training), as
    the OOM killer or a reboot would, and wait until its training process is gone."""
    record = json.loads((run_dir / "launch.json").read_text())
    os.killpg(int(record["job_id"].rpartition(":")[2]), signal.SIGKILL)  # each job leads a session of its own
    trainer = int((run_dir / "run.lock").read_text().split()[1])

    def gone() -> bool:
        try:
            return Path(f"/proc/{trainer}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
        except OSError:
            return True

    wait_until(gone, f"the training process of {run_dir.name} to end", timeout=60)


def status_rows(pushed: dict[str, Path], runs: str) -> dict[str, list[str]]:
    done = subprocess.run(
        ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "status"],
        cwd=pushed["project"], env=environment(pushed, runs), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith("dev/")}


def paused_at(run_dir: Path) -> bool:
    """The run has checkpointed step 10 and pauses at step 20 (it cannot go past: see faults.py)."""
    try:
        return json.loads((run_dir / "status.json").read_text())["step"] == 10
    except (OSError, ValueError, KeyError):
        return False


def assert_equal_to_twins(run_dirs: list[Path], twins: Path) -> None:
    everything = [*run_dirs, *(twins / run_dir.name for run_dir in run_dirs)]
    wait_until(lambda: all(state(run_dir) == "finished" for run_dir in everything), "the runs and their twins")
    for run_dir in run_dirs:
        summary = json.loads((run_dir / "summary.json").read_text())
        assert (
            summary["params_sha256"] == json.loads((twins / run_dir.name / "summary.json").read_text())["params_sha256"]
        ), run_dir.name
        assert metric_steps(run_dir) == list(range(10, 41, 10)), run_dir.name  # each step once


def test_a_local_job_killed_with_its_whole_group_is_relaunched_and_resumes(
    pushed: dict[str, Path], twins: Path
) -> None:
    marker = pushed["root"] / "paused-kill-group"
    pausing = {**os.environ, "REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    first = launch(pushed, "kill-group", "--max-concurrent", "2", "--", *SHORT, *QUIET, "seed=0", env=pausing)
    (target,) = plan_rows(first.stdout)
    whole = launch(pushed, "kill-group", "--max-concurrent", "2", "--", *KILL_SWEEP)
    rows = plan_rows(whole.stdout)
    assert rows.pop(target) == "SKIP" and set(rows.values()) == {"NEW"}, whole.stdout
    run_dirs = [pushed["root"] / "kill-group" / name for name in [target, *rows]]
    wait_until(marker.exists, "the first run to pause at step 20")
    kill_job(run_dirs[0])
    assert status_rows(pushed, "kill-group")[target][1:3] == ["lost", "10/40"]

    again = launch(pushed, "kill-group", "--max-concurrent", "2", "--", *KILL_SWEEP)
    assert plan_rows(again.stdout)[target] == "RELAUNCH", again.stdout
    assert f"RELAUNCH  {target}" in again.stdout and "lost: resumes from step 10" in again.stdout
    assert "(since the plan)" not in again.stdout and "queued 1 run(s) locally" in again.stdout
    assert_equal_to_twins(run_dirs, twins)
    assert status_rows(pushed, "kill-group")[target][1] == "finished"
    assert json.loads((run_dirs[0] / "launch.json").read_text())["launches"] == 2
    assert [json.loads((d / "launch.json").read_text())["launches"] for d in run_dirs[1:]] == [1, 1]
    final = launch(pushed, "kill-group", "--max-concurrent", "2", "--", *KILL_SWEEP)
    assert "nothing to submit" in final.stdout


def test_sigterm_to_a_local_job_is_forwarded_saves_shows_preempted_and_resumes(
    pushed: dict[str, Path], twins: Path
) -> None:
    """A signal to the local job itself (launch/local_job.py), as a user's `kill` or a shutdown sends it: it reaches
    training, which saves and exits 75; the job records that code; a relaunch resumes with the twin's bits."""
    marker = pushed["root"] / "paused-sigterm"
    pausing = {**os.environ, "REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    first = launch(pushed, "sigterm", "--", *SHORT, *QUIET, "seed=1", env=pausing)
    (target,) = plan_rows(first.stdout)
    run_dir = pushed["root"] / "sigterm" / target
    wait_until(marker.exists, "the run to pause at step 20")
    job = int(json.loads((run_dir / "launch.json").read_text())["job_id"].rpartition(":")[2])
    os.kill(job, signal.SIGTERM)  # the job alone, not its process group: the job must forward it

    def ended() -> bool:
        return json.loads((run_dir / "launch.json").read_text()).get("state") == "ended"

    wait_until(ended, "the local job to record how it ended", timeout=120)
    assert json.loads((run_dir / "launch.json").read_text())["exit_code"] == 75
    assert status_rows(pushed, "sigterm")[target][1:3] == ["preempted", "20/40"]
    again = launch(pushed, "sigterm", "--", *SHORT, *QUIET, "seed=1")
    assert plan_rows(again.stdout)[target] == "RELAUNCH" and "preempted: resumes from step 20" in again.stdout
    assert_equal_to_twins([run_dir], twins)


def test_every_process_of_a_sweep_killed_at_once_is_relaunched_and_resumes(
    pushed: dict[str, Path], twins: Path
) -> None:
    """What a reboot leaves behind, as far as one machine can show it: every job and training process gone at
    once, the queue's last run never started."""
    marker = pushed["root"] / "paused-reboot"
    pausing = {**os.environ, "REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    first = launch(pushed, "reboot", "--max-concurrent", "2", "--", *KILL_SWEEP, env=pausing)
    run_dirs = [pushed["root"] / "reboot" / name for name in plan_rows(first.stdout)]
    wait_until(lambda: paused_at(run_dirs[0]) and paused_at(run_dirs[1]), "two runs to pause at step 20")
    time.sleep(1)  # both are at their pause now: it comes a few milliseconds after the checkpoint at step 10
    for run_dir in run_dirs[:2]:
        kill_job(run_dir)
    shown = status_rows(pushed, "reboot")  # once: the run it starts would finish while a later call looked
    seen = [shown[f"dev/{d.name}"][1] for d in run_dirs]
    assert seen[:2] == ["lost", "lost"] and seen[2] in ("queued", "pending", "running"), seen  # status starts it

    again = launch(pushed, "reboot", "--max-concurrent", "2", "--", *KILL_SWEEP)
    rows = plan_rows(again.stdout)
    assert [rows[f"dev/{d.name}"] for d in run_dirs] == ["RELAUNCH", "RELAUNCH", "SKIP"], again.stdout
    assert_equal_to_twins(run_dirs, twins)
    assert [json.loads((d / "launch.json").read_text())["launches"] for d in run_dirs] == [2, 2, 1]


SEARCH_SPACE = """\
metric: val/acc
direction: maximize
trials: 6
seed: 0
overrides: [main_tag=search, trainer.max_steps=40, trainer.eval_every=20, trainer.ckpt_every=10,
            sched.warmup_steps=2, trainer.progress_bar=false]
params:
  optim.lr: {low: 1.0e-4, high: 1.0e-2, log: true}
"""


def completed_trials(database: Path) -> int:
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(database) as connection:  # Optuna's own schema: one row per trial, its state as text
            return connection.execute("SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
    except sqlite3.OperationalError:  # the file is there, but Optuna has not made its tables yet
        return 0


def test_an_optuna_search_killed_after_three_trials_carries_on_to_six(pushed: dict[str, Path]) -> None:
    """Each trial is a launched run; kill -9 of the search leaves its trial in flight RUNNING in the study, and
    the same command again waits for that run instead of training it again."""
    subprocess.run(["uv", "sync", "--frozen", "--extra", "search", "--quiet"], cwd=pushed["project"], check=True)
    space = pushed["root"] / "space.yaml"  # outside the project: launch needs a clean tree
    space.write_text(SEARCH_SPACE)
    env = environment(pushed, "searched")
    command = ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "search", str(space), "--poll-s", "0.5"]
    first = subprocess.Popen(command, cwd=pushed["project"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    database = pushed["root"] / "searched" / "search" / "optuna.db"
    wait_until(lambda: completed_trials(database) >= 3 or first.poll() is not None, "three completed trials")
    os.killpg(first.pid, signal.SIGKILL)  # the search only: each run's job has a session of its own
    output = first.communicate()[0]
    assert first.returncode == -signal.SIGKILL, output
    again = subprocess.run(command, cwd=pushed["project"], env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, output + again.stdout + again.stderr
    assert completed_trials(database) == 6
    with sqlite3.connect(database) as connection:
        states = dict(connection.execute("SELECT state, COUNT(*) FROM trials GROUP BY state").fetchall())
    assert states == {"COMPLETE": 6}, states  # and no trial asked twice, left running or failed
    run_dirs = [path for path in (pushed["root"] / "searched" / "search").iterdir() if path.is_dir()]
    assert len(run_dirs) == 6
    for run_dir in run_dirs:
        assert json.loads((run_dir / "launch.json").read_text())["launches"] == 1  # no trial run twice
        assert state(run_dir) == "finished" and metric_steps(run_dir) == list(range(10, 41, 10))
    assert re.search(r"^best: trial \d+, val/acc=", again.stdout, re.MULTILINE), again.stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurm_cluster.Cluster]:
    yield from slurm_cluster.running(slurm_cluster.start, tmp_path_factory.mktemp("slurm"))


def test_a_slurm_sweep_survives_requeue_and_relaunches_only_what_failed(
    pushed: dict[str, Path], cluster: slurm_cluster.Cluster
) -> None:
    runs, project = pushed["root"] / "slurm", pushed["project"]
    launch_commit = git(project, "rev-parse", "HEAD")
    sweep = [*SHORT, *QUIET, "seed=0,1", "optim.lr=1e-3,3e-3"]
    # 1. One run of the sweep first, made to pause mid-run (faults.py), then the whole sweep: that run is skipped.
    marker = pushed["root"] / "paused"
    pausing = {**cluster.environment, "REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    first = launch(pushed, "slurm", "--backend", "slurm", "--", *SHORT, *QUIET, "seed=0", "optim.lr=1e-3", env=pausing)
    assert "submitted 1 run(s) of dev as Slurm job array" in first.stdout
    assert f"preparing {launch_commit[:12]} in {pushed['root'] / 'cache'} for the compute nodes" in first.stdout
    assert (pushed["root"] / "cache" / "checkouts" / f"{launch_commit}.ready").exists()  # before any job ran
    (target,) = plan_rows(first.stdout)
    whole = launch(pushed, "slurm", "--backend", "slurm", "--", *sweep, env=cluster.environment)
    rows = plan_rows(whole.stdout)
    assert len(rows) == 4 and rows.pop(target) == "SKIP" and set(rows.values()) == {"NEW"}, whole.stdout
    run_dirs = [runs / name for name in [target, *rows]]  # plan rows name runs as <main_tag>/<run_name>

    # 2. Main moves on; then the paused run is requeued: it checkpoints, requeues, resumes at its launch commit.
    wait_until(marker.exists, "the first run to pause at step 20", cluster=cluster)
    (project / "NOTES.md").write_text("A commit after the launch.\n")
    subprocess.run(["git", "add", "NOTES.md"], cwd=project, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-m", "notes"], cwd=project, check=True)
    subprocess.run(["git", "push", "--quiet"], cwd=project, check=True)
    job_id = json.loads((runs / "dev" / target.partition("/")[2] / "launch.json").read_text())["job_id"]
    cluster.run("scontrol", "requeue", job_id)
    time.sleep(5)  # sooner than about 0.3 s after the requeue, Slurm fails the job instead
    cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    wait_until(lambda: all(state(run_dir) == "finished" for run_dir in run_dirs), "4 finished runs", cluster=cluster)

    # 3. Each run equals the same config trained straight through at the launch commit; one line per step.
    for run_dir in run_dirs:
        overrides = json.loads((run_dir / "launch.json").read_text())["overrides"]
        straight = [str(project / "jobs" / "job.sh"), str(pushed["remote"]), launch_commit, run_dir.name, *overrides]
        env = environment(pushed, "straight")
        done = subprocess.run(straight, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        expected = json.loads((pushed["root"] / "straight" / "dev" / run_dir.name / "summary.json").read_text())
        assert json.loads((run_dir / "summary.json").read_text())["params_sha256"] == expected["params_sha256"]
        assert metric_steps(run_dir) == list(range(10, 41, 10))
    (attempt,) = [json.loads(line) for line in (run_dirs[0] / "attempts.jsonl").read_text().splitlines()]
    assert attempt["slurm"]["restart_count"] == "1" and attempt["slurm"]["job_id"]
    assert attempt["git"]["commit"] == launch_commit != git(project, "rev-parse", "HEAD")
    status = subprocess.run(
        ["uv", "run", "--frozen", "--no-sync", DEFAULT_PACKAGE, "status"],
        cwd=project, env=environment(pushed, "slurm", cluster.environment), capture_output=True, text=True,
    )  # fmt: skip
    assert status.returncode == 0 and status.stdout.splitlines()[-1] == "4 runs: 4 finished", status.stdout
    assert re.search(rf"^{target} +finished +40/40 .* {re.escape(job_id)} +1 ", status.stdout, re.MULTILINE), status

    # 4. The same sweep again: all SKIP, nothing submitted.
    again = launch(pushed, "slurm", "--backend", "slurm", "--", *sweep, env=cluster.environment)
    assert set(plan_rows(again.stdout).values()) == {"SKIP"} and "nothing to submit" in again.stdout

    # 5. A fifth run with a bad override fails on the node; launching again relaunches that one only.
    bad = [*SHORT, *QUIET, "trainer.device=cuda"]  # the launcher cannot tell: its own machine may lack the GPU
    fifth = launch(pushed, "slurm", "--backend", "slurm", "--", *bad, env=cluster.environment)
    (bad_run,) = plan_rows(fifth.stdout)
    wait_until(lambda: _job_gone(runs / bad_run, cluster), "the bad run's job to end", cluster=cluster)
    dry = launch(pushed, "slurm", "--backend", "slurm", "--dry-run", "--", *bad, env=cluster.environment)
    assert plan_rows(dry.stdout) == {bad_run: "RELAUNCH"}
    assert "no CUDA device is visible" in dry.stdout and "dry run: nothing submitted" in dry.stdout
    retried = launch(pushed, "slurm", "--backend", "slurm", "--", *bad, env=cluster.environment)
    assert plan_rows(retried.stdout) == {bad_run: "RELAUNCH"} and "submitted 1 run(s)" in retried.stdout
    unchanged = launch(pushed, "slurm", "--dry-run", "--", *sweep, env=cluster.environment)
    assert set(plan_rows(unchanged.stdout).values()) == {"SKIP"}


def _job_gone(run_dir: Path, cluster: slurm_cluster.Cluster) -> bool:
    """Whether the run's job has left Slurm's queue (its log then holds the refusal)."""
    job_id = json.loads((run_dir / "launch.json").read_text())["job_id"]
    return job_id not in cluster.run("squeue", "--noheader", "--array", "--format=%i").stdout.split()


def test_a_slurm_run_of_two_processes_meets_through_srun_and_a_torchrun_rendezvous(
    pushed: dict[str, Path], cluster: slurm_cluster.Cluster
) -> None:
    """The multi-node path (srun, one torchrun per node, c10d rendezvous on the first node), on one node."""
    processes_per_node(pushed, 2)
    done = launch(pushed, "slurm-ddp", "--backend", "slurm", "--", *SHORT, *QUIET, env=cluster.environment)
    (name,) = plan_rows(done.stdout)
    run_dir = pushed["root"] / "slurm-ddp" / name
    wait_until(lambda: _job_gone(run_dir, cluster), "the job to end", cluster=cluster)
    log = Path(json.loads((run_dir / "launch.json").read_text())["log"]).read_text()
    assert state(run_dir) == "finished", log[-3000:]
    assert re.search(r"job.sh: \w+ in .*: srun .* torchrun --nnodes=1 --nproc-per-node=2 --rdzv-backend=c10d", log)
    environment = json.loads((run_dir / "provenance.json").read_text())["environment"]
    assert environment["WORLD_SIZE"] == "2" and "SLURM_STEP_ID" in environment  # two processes, in an srun step


def processes_per_node(pushed: dict[str, Path], count: int) -> None:
    """Set `ntasks_per_node` in the project's Slurm settings, committed and pushed (a launch needs both)."""
    settings = pushed["project"] / "configs" / "launcher" / "slurm.yaml"
    text = re.sub(r"^ntasks_per_node: \d+", f"ntasks_per_node: {count}", settings.read_text(), flags=re.MULTILINE)
    if text != settings.read_text():
        settings.write_text(text)
        commit = ["git", *IDENTITY, "commit", "--quiet", "-am", f"{count} processes per node"]
        subprocess.run(commit, cwd=pushed["project"], check=True)
        subprocess.run(["git", "push", "--quiet"], cwd=pushed["project"], check=True)


@pytest.mark.parametrize("processes", [2, 1])
def test_a_slurm_job_stopped_before_its_time_limit_requeues_itself(
    pushed: dict[str, Path], cluster: slurm_cluster.Cluster, processes: int
) -> None:
    """What `--signal=B:USR2@grace` sends before the time limit: the run saves and stops, and job.sh requeues its
    job once the checkpoint is written. torchrun dies of SIGUSR2, so job.sh passes it on as SIGTERM and reads the
    run's status.json; a single process gets SIGUSR2 itself and exits 75."""
    processes_per_node(pushed, processes)
    marker = pushed["root"] / f"paused-usr2-{processes}"
    pausing = {**cluster.environment, "REPRODUCIBILITY_PAUSE": "step:20", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    runs = f"slurm-usr2-{processes}"
    done = launch(pushed, runs, "--backend", "slurm", "--", *SHORT, *QUIET, "seed=7", env=pausing)
    (name,) = plan_rows(done.stdout)
    run_dir = pushed["root"] / runs / name
    job_id = json.loads((run_dir / "launch.json").read_text())["job_id"]
    wait_until(marker.exists, "the run to pause at step 20", cluster=cluster)
    cluster.run("scancel", "--signal=USR2", "--batch", job_id)
    log = Path(json.loads((run_dir / "launch.json").read_text())["log"])
    wait_until(lambda: "requeueing job" in log.read_text() or _job_gone(run_dir, cluster), "a requeue", cluster=cluster)
    # A lone task runs under its array's job id, which names every task of the array: job.sh names the task.
    assert f"checkpoint saved after SIGUSR2: requeueing job {job_id}" in log.read_text(), log.read_text()[-3000:]
    time.sleep(5)
    cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    wait_until(lambda: state(run_dir) == "finished", "the requeued run to finish", cluster=cluster)
    (attempt,) = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert attempt["slurm"]["restart_count"] == "1"
    assert metric_steps(run_dir) == list(range(10, 41, 10))
