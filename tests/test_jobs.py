"""The job script runs exactly the commit it is given, with that commit's submodules, however main has moved;
`reproduce` runs a finished run again and compares the bits."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import containers
from helpers.commands import run
from helpers.generation import DEFAULT_PACKAGE, generate
from helpers.git import IDENTITY, git, make_package_repo

pytestmark = pytest.mark.slow

SHORT = ["trainer.max_steps=60", "sched.warmup_steps=5", "trainer.progress_bar=false"]


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A project with one submodule dependency, pushed to a bare remote: commit A, then commit B that changes
    the model's default and bumps the submodule."""
    root = tmp_path_factory.mktemp("jobs")
    lib = make_package_repo(root / "lib", "lib", ["1", "2"])
    project = generate(root / "project", external_deps=json.dumps([f"{root / 'lib'}@{lib[0]}"]))
    remote = root / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=project, check=True)
    subprocess.run(["git", "push", "--quiet", "--set-upstream", "origin", "main"], cwd=project, check=True)
    commit_a = git(project, "rev-parse", "HEAD")

    mlp = project / "configs" / "model" / "mlp.yaml"
    mlp.write_text(mlp.read_text().replace("hidden_sizes: [128, 128]", "hidden_sizes: [64]"))
    subprocess.run(["git", "checkout", "--quiet", lib[1]], cwd=project / "external" / "lib", check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-m", "B: narrower MLP, lib 2"], cwd=project, check=True)
    subprocess.run(["git", "push", "--quiet"], cwd=project, check=True)
    commit_b = git(project, "rev-parse", "HEAD")
    return {"root": root, "project": project, "remote": str(remote), "a": commit_a, "b": commit_b, "lib": lib}


def job(pushed: dict, commit: str, name: str, runs: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    env = {"RUNS_DIR": str(pushed["root"] / runs), "JOB_CACHE": str(pushed["root"] / "cache")}
    script = str(pushed["project"] / "jobs" / "job.sh")
    command = [script, pushed["remote"], commit, name, *SHORT]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env}, timeout=900)
    assert done.returncode == expect, done.stderr[-3000:]
    return done


def recorded(pushed: dict, runs: str, name: str) -> tuple[dict, str]:
    run_dir = pushed["root"] / runs / "dev" / name
    summary = json.loads((run_dir / "summary.json").read_text())
    return json.loads((run_dir / "provenance.json").read_text()), summary["params_sha256"]


def test_job_script_is_shellcheck_clean(default_project: Path) -> None:
    if shutil.which("shellcheck") is None:
        if containers.required():
            pytest.fail("shellcheck is missing, but TEMPLATE_FULL_SUITE=1 (see .ci/run)")
        pytest.skip("shellcheck is not installed")
    run(default_project, "shellcheck", "jobs/job.sh")
    assert os.access(default_project / "jobs" / "job.sh", os.X_OK)


def checked_out(provenance: dict) -> list[str]:
    """The commits of the project's own submodules (the library, external/samebits, is pinned the same way)."""
    return [s["checked_out"] for s in provenance["submodules"] if s["path"] != "external/samebits"]


def test_a_job_runs_its_own_commit_and_submodules_after_main_moved(pushed: dict) -> None:
    job(pushed, pushed["a"], "run-a", "first")
    job(pushed, pushed["a"][:10], "run-a", "again")  # a short SHA names the same commit
    job(pushed, pushed["b"], "run-b", "moved")
    first, again, moved = (recorded(pushed, runs, name) for runs, name in
                           (("first", "run-a"), ("again", "run-a"), ("moved", "run-b")))  # fmt: skip
    for provenance, _ in (first, again):
        assert provenance["git"]["commit"] == pushed["a"]
        assert checked_out(provenance) == [pushed["lib"][0]]
    assert first[1] == again[1]  # identical bits
    assert moved[0]["git"]["commit"] == pushed["b"]
    assert checked_out(moved[0]) == [pushed["lib"][1]]
    assert moved[1] != first[1]  # B trains another model


def test_job_forwards_sigterm_and_passes_the_requeue_code_through(pushed: dict) -> None:
    marker = pushed["root"] / "paused"
    env = {
        **os.environ,
        "RUNS_DIR": str(pushed["root"] / "preempted"),
        "JOB_CACHE": str(pushed["root"] / "cache"),
        "REPRODUCIBILITY_PAUSE": "step:20",  # the training pauses at step 20 (see faults.py) ...
        "REPRODUCIBILITY_PAUSE_MARKER": str(marker),
    }
    command = [str(pushed["project"] / "jobs" / "job.sh"), pushed["remote"], pushed["a"], "preempted", *SHORT]
    job_process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert job_process.poll() is None and time.monotonic() < deadline, job_process.stderr.read()
        time.sleep(0.05)
    # A prune that keeps nothing still leaves the checkout this job runs from (job.sh holds its lock).
    checkouts = pushed["root"] / "cache" / "checkouts"
    others = [path for path in checkouts.iterdir() if path.is_dir() and path.name != pushed["a"]]
    prune = ["uv", "run", "--frozen", DEFAULT_PACKAGE, "jobs-cache", "prune", "--keep", "0"]
    pruned = subprocess.run(prune, cwd=pushed["project"], capture_output=True, text=True, env=env, timeout=300)
    assert pruned.returncode == 0 and f"skipped {pushed['a']}: a running job uses it" in pruned.stdout, pruned
    assert (checkouts / f"{pushed['a']}.ready").exists()
    assert all(f"removed {path.name} (" in pruned.stdout and not path.exists() for path in others), pruned.stdout
    job_process.send_signal(signal.SIGTERM)  # ... and the job script, not the training, gets the signal
    assert job_process.wait(timeout=300) == 75
    status = json.loads((pushed["root"] / "preempted" / "dev" / "preempted" / "status.json").read_text())
    assert (status["state"], status["step"]) == ("preempted", 20)


def network_namespaces() -> bool:
    """Whether this machine lets the tests start a process with no network at all (`unshare -n`: root, Linux)."""
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode == 0


def test_a_job_on_a_node_without_network_fetches_nothing(pushed: dict) -> None:
    """Compute nodes often reach no git server and no package index. `job.sh --prepare`, which `launch --backend
    slurm` runs on the login node, leaves a checkout that a job runs with no network at all (`unshare -n`) and its
    remote gone. A commit never prepared still installs from uv's cache: an online `uv sync --frozen` asked the
    index for the project's build backend even with every wheel cached, and failed there."""
    if not network_namespaces():
        if os.environ.get("TEMPLATE_FULL_SUITE") == "1":
            pytest.fail("unshare -n is not allowed here, but TEMPLATE_FULL_SUITE=1 (see .ci/run)")
        pytest.skip("unshare -n (a process without network) is not allowed here")
    cache = pushed["root"] / "offline-cache"  # nothing prepared by the other tests
    env = {**os.environ, "RUNS_DIR": str(pushed["root"] / "offline"), "JOB_CACHE": str(cache)}
    script = str(pushed["project"] / "jobs" / "job.sh")
    prepared = subprocess.run([script, pushed["remote"], pushed["b"], "--prepare"], env=env, capture_output=True,
                              text=True, timeout=900)  # fmt: skip
    assert prepared.returncode == 0 and f"{pushed['b']} prepared in" in prepared.stderr, prepared.stderr[-3000:]
    assert (cache / "checkouts" / f"{pushed['b']}.ready").exists()
    assert not (pushed["root"] / "offline").exists()  # prepared, not trained

    remote, away = Path(pushed["remote"]), Path(pushed["remote"] + ".away")
    remote.rename(away)
    try:
        offline = ["unshare", "-n", script, pushed["remote"], pushed["b"], "offline-b", *SHORT]
        done = subprocess.run(offline, env=env, capture_output=True, text=True, timeout=900)
    finally:
        away.rename(remote)
    assert done.returncode == 0, done.stderr[-3000:]
    unprepared = ["unshare", "-n", script, pushed["remote"], pushed["a"], "offline-a", *SHORT]
    done = subprocess.run(unprepared, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert recorded(pushed, "offline", "offline-a")[0]["git"]["commit"] == pushed["a"]


@pytest.mark.parametrize(
    ("commit", "message"),
    [
        ("0123abcd", "job.sh: error: commit 0123abcd is not in "),
        ("not-a-sha", "job.sh: error: COMMIT_SHA 'not-a-sha' is not a commit SHA"),
    ],
)
def test_a_bad_commit_fails_in_one_line(pushed: dict, commit: str, message: str) -> None:
    done = job(pushed, commit, "run-x", "bad", expect=2)
    assert done.stderr.startswith(message) and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_reproduce_passes_on_a_finished_run_and_fails_on_altered_records(pushed: dict) -> None:
    """The run is cloned through a remote URL with a password in it, as many users' https remotes hold: records
    keep the URL without it, and job.sh and reproduce, started in the project, clone with the project's remote."""
    secret = "https://alice:hunter2@git.example.com/me/exp.git"
    public = "https://git.example.com/me/exp.git"
    with Path(os.environ["GIT_CONFIG_GLOBAL"]).open("a") as config:  # only the URL with the password reaches it
        config.write(f'[url "{pushed["remote"]}"]\n\tinsteadOf = {secret}\n')
    subprocess.run(["git", "remote", "add", "credentialed", secret], cwd=pushed["project"], check=True)
    env = {**os.environ, "RUNS_DIR": str(pushed["root"] / "original"), "JOB_CACHE": str(pushed["root"] / "cache-pw")}
    try:
        command = [str(pushed["project"] / "jobs" / "job.sh"), public, pushed["a"], "to-reproduce", *SHORT]
        done = subprocess.run(command, cwd=pushed["project"], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        run_dir = pushed["root"] / "original" / "dev" / "to-reproduce"
        assert json.loads((run_dir / "provenance.json").read_text())["git"]["remote_url"] == public
        stored = [*run_dir.rglob("*"), *(pushed["root"] / "cache-pw").glob("*.git/config")]
        assert not [path for path in stored if path.is_file() and b"hunter2" in path.read_bytes()]

        def reproduce(*args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
            command = ["uv", "run", "--frozen", DEFAULT_PACKAGE, "reproduce", str(run_dir), *args]
            done = subprocess.run(command, cwd=pushed["project"], env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == expect, done.stdout[-3000:] + done.stderr[-3000:]
            return done

        assert "identical: the run was reproduced bit for bit" in reproduce().stdout
        partly = reproduce("--steps", "20")
        assert "every line logged in the first 20 steps was reproduced bit for bit; the weights were not" in (
            partly.stdout
        )
        assert "the run was reproduced bit for bit" not in partly.stdout  # it claims only what it compared
    finally:
        subprocess.run(["git", "remote", "remove", "credentialed"], cwd=pushed["project"], check=True)

    metrics = run_dir / "metrics.jsonl"
    rows = metrics.read_text().splitlines()
    altered = json.loads(rows[2])
    altered["train/loss"] += 1e-12
    metrics.write_text("\n".join([*rows[:2], json.dumps(altered), *rows[3:]]) + "\n")
    failed = reproduce("--repo", pushed["remote"], expect=1)  # the URL given, instead of the recorded one
    assert f"step {altered['step']} train/loss" in failed.stdout

    config = run_dir / "config.yaml"  # an edited config is named before anything runs again
    config.write_text(config.read_text().replace("  lr: 0.003\n", "  lr: 0.002\n", 1))
    refused = reproduce(expect=2)
    assert refused.stderr.startswith("error: the run's records disagree") and "config.yaml does not hash" in (
        refused.stderr
    )
    assert len(refused.stderr.splitlines()) == 1 and "reproducing" not in refused.stdout


def test_a_submodule_commit_missing_upstream_fails_in_one_line(pushed: dict) -> None:
    """Commit C pins lib at a commit that exists only in the project's own checkout of lib, never pushed."""
    project, lib = pushed["project"], pushed["project"] / "external" / "lib"
    (lib / "LOCAL.md").write_text("never pushed\n")
    subprocess.run(["git", "add", "LOCAL.md"], cwd=lib, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-m", "local only"], cwd=lib, check=True)
    subprocess.run(["git", "add", "external/lib"], cwd=project, check=True)
    subprocess.run(
        ["git", *IDENTITY, "commit", "--quiet", "-m", "C: pin an unpushed lib commit"], cwd=project, check=True
    )
    subprocess.run(["git", "push", "--quiet"], cwd=project, check=True)
    done = job(pushed, git(project, "rev-parse", "HEAD"), "run-c", "unpushed", expect=2)
    assert done.stderr.startswith("job.sh: error: a submodule commit that ")
    assert done.stderr.strip().endswith("cannot be fetched: push it upstream")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
