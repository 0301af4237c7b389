"""`<package> reproduce RUN_DIR [--steps N]`: run a past run again from its commit, lock and config, and
compare the bits.

It first checks that the run's records agree with each other and with their hashes (proof/consistency.py): a
record edited or damaged after the run is named, and nothing is re-run. It then runs jobs/job.sh for the recorded
commit (a fresh checkout with its submodules, `uv sync --frozen` of its uv.lock) with the recorded overrides into a
temporary runs folder, and compares `params_sha256`, `rng_sha256` and every logged line with the original. With
`--steps N` only the first N steps are re-run, and only their lines are compared. The exit code is 1 on a
difference, 2 when the run cannot be reproduced (disagreeing records, started outside git or from a dirty tree,
or its commit is gone).

The repository is cloned from `--repo URL` if given, else from the recorded remote URL, which records keep without
credentials: job.sh, started in this project, clones with this project's remote of that URL, credentials and all.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..core.config import NON_IDENTITY_KEYS
from ..core.errors import NotIdentical, UsageError
from ..core.preemption import REQUEUE_EXIT_CODE
from ..core.run_files import RunFiles
from ..project import current
from .chains import RunResult
from .consistency import Disagreement, check
from .reproducibility import compare, print_table

NOT_COMPARED = "(not compared)"


def reproduce(run_dir: Path, steps: int | None, repo: str | None = None) -> None:
    if not RunFiles(run_dir).provenance.exists():
        raise UsageError(f"{run_dir} has no provenance.json: pass the folder of a run (runs/<main_tag>/<run_name>)")
    if not RunFiles(run_dir).metrics.exists():
        raise UsageError(f"{run_dir} has no metrics.jsonl: there is nothing to compare a reproduction with")
    if steps is None and not RunFiles(run_dir).summary.exists():
        raise UsageError(f"{run_dir} has not finished: compare its first steps with --steps N")
    try:
        provenance, lines = check(run_dir, finished=steps is None)
    except Disagreement as disagreement:
        raise UsageError(
            f"the run's records disagree, so a reproduction would compare against a wrong record: {disagreement}"
        ) from None
    git, run = provenance["git"], provenance["run"]
    if git["commit"] is None:
        raise UsageError("the run was not started from a git checkout: there is no commit to run again")
    if git["dirty"]:
        raise UsageError(f"the run was started from a dirty tree (commit {git['commit'][:12]} plus its dirty.patch): "
                         "it cannot be reproduced exactly; commit your changes before launching runs")  # fmt: skip
    repo = repo or git["remote_url"] or str(current().root)
    overrides = [o for o in run["overrides"] if _key(o) not in NON_IDENTITY_KEYS or _key(o) == "main_tag"]
    if steps is not None:
        overrides.append(f"trainer.stop_at_step={steps}")
    print(f"reproducing {run['name']} from {git['commit'][:12]} of {repo}", flush=True)

    with tempfile.TemporaryDirectory(prefix="reproduce-") as scratch:
        job = [str(current().job_script), repo, git["commit"], run["name"], *overrides]
        done = subprocess.run(job, env={**os.environ, "RUNS_DIR": scratch}, cwd=current().root, text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        if done.returncode == 2 and "job.sh: error:" in done.stderr:
            raise UsageError(f"cannot reproduce: {done.stderr.split('job.sh: error: ', 1)[1].strip()}")
        if done.returncode not in (0, REQUEUE_EXIT_CODE if steps else 0):
            raise UsageError(
                f"the reproduction failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}"
            )
        again_dir = Path(scratch) / run["main_tag"] / run["name"]
        again = _result(again_dir, _lines(RunFiles(again_dir).metrics), steps)
    original = _result(run_dir, lines, steps)
    verdict = compare(f"reproduce {run['name']}"[:40], original, again)
    print_table([verdict])
    if not verdict.identical:
        raise NotIdentical()
    if steps is None:
        print("\nidentical: the run was reproduced bit for bit (params_sha256, rng_sha256 and every logged line)")
    else:
        print(f"\nidentical: every line logged in the first {steps} steps was reproduced bit for bit; the weights "
              "were not compared (run without --steps to compare params_sha256)")  # fmt: skip


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _result(run_dir: Path, rows: list[dict[str, Any]], steps: int | None) -> RunResult:
    if steps is not None:
        return RunResult(NOT_COMPARED, [row for row in rows if row["step"] <= steps])
    summary = json.loads(RunFiles(run_dir).summary.read_text())
    return RunResult(summary["params_sha256"], rows, rng_sha256=summary.get("rng_sha256"))


def _key(override: str) -> str:
    key = override.split("=", 1)[0].lstrip("+~")
    return key if key.startswith("trainer.") or "." not in key else key.split(".")[0]
