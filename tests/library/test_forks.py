"""The proof's runs are forked from a server that has imported torch (samebits/proof/forks.py). Each must still be
a process of its own, as `python -m` would start it: its pid, its arguments and environment, its output, its exit
code, a real kill -9, and a signal handled by its own handler."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from samebits.proof import forks
from samebits.proof.chains import FORKED_TORCHRUN

PROBE = "library.helpers.forked_probe"


def test_a_forked_run_is_a_process_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONLY_IN_THE_TEST_PROCESS", "1")
    ours = dict(os.environ)
    server = {"PYTHONHASHSEED": "0", "FOR_THE_SERVER_ONLY": "1", "PYTHONPATH": str(Path(__file__).parents[1])}
    context = forks.start_server(["library.helpers.preloaded"], server, tmp_path / "tracker")
    assert dict(os.environ) == ours
    report = tmp_path / "seen.json"
    environment = {key: value for key, value in os.environ.items() if key != "ONLY_IN_THE_TEST_PROCESS"}
    environment |= {"PROBE_REPORT": str(report), "PYTHONHASHSEED": "0"}

    monkeypatch.chdir(tmp_path)  # after the server started: a run starts in the folder of the one that forks it
    exiting = forks.Forked(context, PROBE, ["exit", "75"], environment, tmp_path / "exit.stderr")
    assert exiting.wait(timeout=120) == 75 == exiting.returncode
    seen = json.loads(report.read_text())
    assert seen["preloaded"]  # by the server, which imported torch before any run
    assert seen["pid"] == exiting.pid != os.getpid()
    assert seen["cwd"] == str(tmp_path)
    assert seen["argv"][1:] == ["exit", "75"] and seen["argv"][0].endswith("forked_probe.py")
    assert seen["environment"] == environment
    fresh = subprocess.run(
        [sys.executable, "-c", "print(hash('samebits'))"], env={"PYTHONHASHSEED": "0"}, capture_output=True, text=True
    )
    assert seen["hash"] == int(fresh.stdout)  # the server started with the shared PYTHONHASHSEED
    assert (tmp_path / "exit.stderr").read_text() == "to stderr\n"

    # Unseeded, each run draws other numbers, as fresh interpreters do, or an unseeded run would pass the proof.
    draws = [seen["draws"]]
    for _ in range(2):
        assert forks.Forked(context, PROBE, ["exit", "0"], environment, tmp_path / "again.stderr").wait(120) == 0
        draws.append(json.loads(report.read_text())["draws"])
    for generator in zip(*draws, strict=True):
        assert len(set(generator)) == len(draws), draws

    for signum, code in ((signal.SIGKILL, -signal.SIGKILL), (signal.SIGTERM, 75)):
        waiting = forks.Forked(context, PROBE, ["wait"], environment, tmp_path / "wait.stderr")
        deadline = time.monotonic() + 120
        while not Path(f"{report}.waiting").exists() and time.monotonic() < deadline:
            assert waiting.poll() is None
            time.sleep(0.01)
        Path(f"{report}.waiting").unlink()
        waiting.send_signal(signum)
        assert waiting.wait(timeout=120) == code


def test_torchruns_forked_workers_are_processes_of_their_own(tmp_path: Path) -> None:
    """The proof's torchrun (proof/forked_torchrun.py) forks its workers; each is still a process of its own, with
    its rank's environment and generators reseeded, and a worker's failure fails the launch as torchrun's does.
    (Proof 6 runs it to success, and to a requeue exit, at every proof.)"""
    code = 75
    tests = str(Path(__file__).parents[1])
    context = forks.start_server(["library.helpers.preloaded"], {"PYTHONPATH": tests}, tmp_path / "tracker")
    report = tmp_path / "seen.json"
    environment = {**os.environ, "PROBE_REPORT": str(report), "PYTHONPATH": tests}
    torchrun = ["--standalone", "--nproc-per-node=2", "-m", PROBE, "exit", str(code)]
    launcher = forks.Forked(
        context, FORKED_TORCHRUN, ["--preload", "library.helpers.preloaded", *torchrun], environment, tmp_path / "err"
    )
    assert launcher.wait(timeout=300) == 1  # torchrun's code for a failed worker, whatever the worker's
    seen = [json.loads(Path(f"{report}{rank}").read_text()) for rank in range(2)]
    assert len({launcher.pid, os.getpid(), *(worker["pid"] for worker in seen)}) == 4
    for rank, worker in enumerate(seen):
        assert worker["preloaded"]  # by the launcher's server, not by the worker
        assert worker["argv"][1:] == ["exit", str(code)]
        assert (worker["environment"]["RANK"], worker["environment"]["WORLD_SIZE"]) == (str(rank), "2")
    assert seen[0]["draws"][1:] != seen[1]["draws"][1:]  # NumPy's and torch's generators reseeded in each
    assert (tmp_path / "err").read_text().count("to stderr") == 2
