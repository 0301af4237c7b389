"""One local job: `python -m <package>.launch.local_job RUN_DIR LEASE_FD`, started detached by launch/local.py.

It holds the run's lease (inherited as LEASE_FD) for as long as it lives, runs jobs/job.sh at the recorded
commit, forwards SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 to it (training saves and exits 75), records the exit code
in the launch record, and then starts the next queued runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from ..core.files import utc_now
from ..project import current
from . import local, records


def main(run_dir: Path, lease_descriptor: int) -> int:
    record = records.read(run_dir) or {}
    environment = os.environ | {key: str(value) for key, value in record.get("environment", {}).items()}
    command = [str(current().job_script), record["repo"], record["commit"], run_dir.name]
    job = subprocess.Popen([*command, *record.get("overrides", [])], env=environment, stdin=subprocess.DEVNULL)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, lambda received, _frame: job.send_signal(received))
    code = job.wait()
    ended = {"state": "ended", "exit_code": code, "ended_at": utc_now()}
    records.write(run_dir, (records.read(run_dir) or record) | ended)
    os.close(lease_descriptor)  # the run is free before the next ones start
    local.advance(Path(record["environment"]["RUNS_DIR"]))
    return code


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))
