"""The reproducibility proof: the same config, run twice in fresh processes, must give the same bits.

    python -m <package>.reproducibility [--device cpu] [overrides...]     (what `nox -s reproducibility` runs)

Both runs must end with the same `params_sha256` and log the same losses and metrics, to the last bit, at
every logged step.
A table shows the result; the exit code is 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = __package__ or __name__.rpartition(".")[0]


@dataclass
class RunResult:
    params_sha256: str
    metrics: dict[int, dict[str, float]]  # step -> every value logged at that step


@dataclass
class Verdict:
    proof: str
    reference: str
    candidate: str
    first_difference: str

    @property
    def identical(self) -> bool:
        return self.reference == self.candidate and not self.first_difference


def train(run_roots: list[Path], overrides: list[str]) -> list[RunResult]:
    """Train once per folder, each in a fresh process, side by side; return what each run left behind.

    Each run uses `trainer.num_threads` threads (1 by default), so running them together changes no bits.
    """
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                f"{PACKAGE}.train",
                f"paths.runs_dir={root}",
                "main_tag=proof",
                *overrides,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for root in run_roots
    ]
    results = []
    for root, process in zip(run_roots, processes, strict=True):
        _, stderr = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"error: training failed (exit {process.returncode}):\n{stderr[-2000:]}")
        (run_dir,) = (root / "proof").iterdir()
        summary = json.loads((run_dir / "summary.json").read_text())
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        results.append(RunResult(summary["params_sha256"], {row.pop("step"): row for row in rows}))
    return results


def compare(proof: str, reference: RunResult, candidate: RunResult) -> Verdict:
    difference = ""
    for step in sorted(reference.metrics.keys() | candidate.metrics.keys()):
        expected, got = reference.metrics.get(step, {}), candidate.metrics.get(step, {})
        if expected != got:
            key = next(k for k in sorted(expected.keys() | got.keys()) if expected.get(k) != got.get(k))
            difference = f"step {step} {key}: {expected.get(key)!r} vs {got.get(key)!r}"
            break
    return Verdict(proof, reference.params_sha256, candidate.params_sha256, difference)


def print_table(verdicts: list[Verdict]) -> None:
    header = f"{'proof':<24} {'reference':<18} {'candidate':<18} {'result':<10} first difference"
    print(f"\n{header}")
    print("-" * len(header))
    for v in verdicts:
        result = "identical" if v.identical else "DIFFERENT"
        print(f"{v.proof:<24} {v.reference[:16]:<18} {v.candidate[:16]:<18} {result:<10} {v.first_difference or '-'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {PACKAGE}.reproducibility", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="device to train on (default: cpu)")
    parser.add_argument("overrides", nargs="*", help="config overrides for every run, e.g. trainer.max_steps=200")
    args = parser.parse_args(argv)
    overrides = [f"trainer.device={args.device}", "trainer.progress_bar=false", *args.overrides]

    with tempfile.TemporaryDirectory(prefix="reproducibility-") as scratch:
        print(f"training twice with: {' '.join(overrides)}", flush=True)
        first, second = train([Path(scratch, "first"), Path(scratch, "second")], overrides)
    verdicts = [compare("two identical runs", first, second)]
    print_table(verdicts)
    print(f"\nreference params_sha256: {first.params_sha256}\nsecond    params_sha256: {second.params_sha256}")
    if not all(v.identical for v in verdicts):
        raise SystemExit(1)
    print(f"\nall {len(verdicts)} proof(s) identical")


if __name__ == "__main__":
    main()
