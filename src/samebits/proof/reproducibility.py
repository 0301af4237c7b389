"""The reproducibility proof: a run gives the same bits however it is run, stopped, killed or resumed.

    <package> proof [--device cuda] [--seed N] [--only 1,2] [--fresh] [overrides...]
    nox -s reproducibility [-- the same arguments]

Against an uninterrupted reference run of the same config (the default experiment shortened to 240 steps, see
PROOF_SCHEDULE, plus any overrides given), every proof must end with the same `params_sha256`, the same
`rng_sha256` (every generator's state; the runs also draw from NumPy's and Python's, see core/failpoints.py) and the
same metrics.jsonl, line for line and bit for bit:
  1. a second identical run;
  2. stopped mid-epoch at step k, then resumed in a new process;
  3. the same, resumed with 2 DataLoader workers and another checkpoint interval;
  4. kill -9 at a random step, then while a checkpoint is being written, then at another step, then a relaunch;
  5. SIGTERM at a random step: exit code 75 ("requeue me"), then a relaunch;
  6. torchrun with 2 processes: two runs, and a mid-epoch resume, against their own reference;
  7. the latest checkpoint truncated: it is reported, the one before it is used;
  8. kill -9 while a checkpoint is written in the background, the loop trained and logged past it, then a relaunch.
One table row per proof; the exit code is 1 on any difference. The proofs start 26 training processes. Each is
its own OS process, interrupted by real signals, forked from one that has imported torch already (torchrun's
workers from torchrun's launcher), so each skips most of its start-up (forks.py, forked_torchrun.py); `--fresh`
starts each as a new interpreter, and runs the torchrun command itself.
`--only` runs a subset. The proof's time is in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..composition import composed
from ..core.errors import NotIdentical, one_line_config_errors
from ..project import current
from . import chains
from .chains import Candidates, Runner, RunResult, Schedule

# A shorter run than the default experiment's 600 steps, with the same code paths: about 11 epochs, checkpoints
# and evaluations every 50 steps. Half the training time of the proof is saved (most of it under torchrun);
# pass trainer.max_steps=600 trainer.ckpt_every=100 trainer.eval_every=100 to prove the full default run.
# One thread per process: the proof runs up to 6 processes side by side, and more threads would only fight for
# the cores (docs/decisions/0005-one-thread-per-proof-process.md).
PROOF_SCHEDULE = [
    "trainer.max_steps=240",
    "trainer.ckpt_every=50",
    "trainer.eval_every=50",
    "trainer.num_threads=1",
    "trainer.progress_bar=false",
]
RESEARCH_GROUPS = ("data", "model", "objective", "optim", "sched")
CHAINS = {
    "1": chains.twice,
    "2": chains.stop_and_resume,
    "3": chains.stop_and_resume,
    "4": chains.kill_nine,
    "5": chains.sigterm,
    "6": chains.torchrun,
    "7": chains.stop_and_resume,
    "8": chains.kill_in_flight,
}


@dataclass
class Verdict:
    proof: str
    reference: str
    candidate: str
    first_difference: str

    @property
    def identical(self) -> bool:
        return self.reference == self.candidate and not self.first_difference


def compare(proof: str, reference: RunResult, candidate: RunResult) -> Verdict:
    """Find the first logged line that differs; any problem the proof noticed, and RNG states that differ at the
    end (recorded by both runs), count as a difference too."""
    difference = "; ".join(candidate.problems)
    for index in range(max(len(reference.rows), len(candidate.rows))):
        expected = reference.rows[index] if index < len(reference.rows) else {}
        got = candidate.rows[index] if index < len(candidate.rows) else {}
        if expected != got:
            key = next(k for k in sorted(expected.keys() | got.keys()) if expected.get(k) != got.get(k))
            step = expected.get("step", got.get("step"))
            difference = difference or f"step {step} {key}: {expected.get(key)!r} vs {got.get(key)!r}"
            break
    expected_rng, got_rng = reference.rng_sha256, candidate.rng_sha256
    if expected_rng and got_rng and expected_rng != got_rng:
        difference = difference or f"RNG state at the end: {expected_rng[:12]} vs {got_rng[:12]}"
    return Verdict(proof, reference.params_sha256, candidate.params_sha256, difference)


def schedule_of(overrides: list[str]) -> Schedule:
    """Read the step counts of the config under test, without starting torch."""
    return _schedule(composed([*overrides, "run_name=probe"], resolve=False))


def _schedule(cfg: DictConfig) -> Schedule:
    train_samples = getattr(OmegaConf.to_object(cfg.data), "train_samples", None)  # see research/schemas.py
    per_epoch = train_samples() // cfg.data.batch_size if callable(train_samples) else None
    return Schedule(cfg.trainer.max_steps, cfg.trainer.ckpt_every, per_epoch, cfg.trainer.eval_every)


def instantiated_modules(cfg: DictConfig) -> list[str]:
    """The modules of every `_target_` in the research code's groups of `cfg`: what each run of it imports (a
    dataset's scikit-learn, say), which the fork server then imports once for all of them. Not the trackers':
    a tracker's service may start threads as it is imported, and the server must fork with none. (A research
    module that starts a thread or touches a GPU as it is imported would break that too: prove it with --fresh.)"""
    targets: set[str] = set()
    stack: list[object] = [OmegaConf.to_container(cfg[group], resolve=False) for group in RESEARCH_GROUPS]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            target = node.get("_target_")
            if isinstance(target, str) and "." in target:
                targets.add(target.rpartition(".")[0])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(targets)


def prove(
    runner: Runner, schedule: Schedule, rng_seed: int, selected: list[Callable[..., Candidates]]
) -> list[Verdict]:
    """Run every proof chain side by side (each chain's processes one after the other), then compare."""

    def run_chain(chain: Callable[..., Candidates]) -> Candidates | str:
        started = time.monotonic()
        try:
            found = chain(runner, schedule, random.Random(f"{rng_seed}-{chain.__name__}"))
        except Exception as error:  # a run that crashed or exited unexpectedly fails its proofs; it is not a bug here
            runner.log(f"{chain.__name__}: {type(error).__name__}: {error}")
            return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        runner.log(f"{chain.__name__} done in {time.monotonic() - started:.0f} s")
        return found

    with ThreadPoolExecutor(max_workers=len(selected)) as pool:
        outcomes = dict(zip(selected, pool.map(run_chain, selected), strict=True))
    references = {
        ref: result for found in outcomes.values() if isinstance(found, list) for name, ref, result in found if not name
    }
    verdicts = []
    for chain, found in outcomes.items():
        if isinstance(found, str):
            verdicts.append(Verdict(chain.__name__, "-", "-", f"ERROR: {found}"))
            continue
        for name, ref, result in found:
            if name:
                missing = RunResult("-", [], ["its reference run failed"])
                verdicts.append(compare(name, references.get(ref, missing), result))
    return sorted(verdicts, key=lambda verdict: verdict.proof)


def print_table(verdicts: list[Verdict]) -> None:
    header = f"{'proof':<40} {'reference':<16} {'candidate':<16} {'result':<10} first difference"
    print(f"\n{header}\n{'-' * len(header)}")
    for v in verdicts:
        result = "identical" if v.identical else "DIFFERENT"
        print(f"{v.proof:<40} {v.reference[:16]:<16} {v.candidate[:16]:<16} {result:<10} {v.first_difference or '-'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"{current().package} proof", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="device to train on (default: cpu)")
    parser.add_argument("--seed", type=int, default=None, help="replay the random interruption points of a past run")
    parser.add_argument("--only", default="1,2,3,4,5,6,7,8", help="comma-separated proof numbers (default: all)")
    parser.add_argument(
        "--fresh", action="store_true", help="start every run as a new interpreter, not forked (slower, same proofs)"
    )
    parser.add_argument("overrides", nargs="*", help="config overrides for every run, e.g. trainer.max_steps=200")
    args = parser.parse_args(argv)
    overrides = [f"trainer.device={args.device}", *PROOF_SCHEDULE, *args.overrides]
    rng_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    only = set(args.only.split(","))
    if not only <= set(CHAINS):
        parser.error(f"--only takes proof numbers from 1 to 8, not {args.only}")
    if "6" in only and args.device != "cpu" and _gpus() < 2:
        print("6 torchrun x2: skipped, it needs 2 GPUs")
        only.discard("6")
    selected = [chains.reference, *dict.fromkeys(CHAINS[number] for number in sorted(only))]

    with one_line_config_errors(hint=f"list every setting with: python -m {current().package}.train --cfg job"):
        cfg = composed([*overrides, "run_name=probe"], resolve=False)  # a bad override is refused here, in one line
        schedule = _schedule(cfg)
    print(f"proving with: {' '.join(overrides)}\ninterruption points from --seed {rng_seed}", flush=True)
    if schedule.batches_per_epoch is None:
        print("the data's schema has no train_samples(): stops may fall on an epoch's end, not only in its middle")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reproducibility-") as scratch:
        runner = Runner(Path(scratch), overrides, _progress, fresh=args.fresh, preload=instantiated_modules(cfg))
        found = prove(runner, schedule, rng_seed, selected)
    verdicts = [v for v in found if v.proof[0] in only or not v.proof[0].isdigit()]  # errors have no number
    print_table(verdicts)
    different = [v for v in verdicts if not v.identical]
    print(f"\n{len(verdicts) - len(different)} of {len(verdicts)} identical in {time.monotonic() - started:.0f} s")
    if different:
        raise NotIdentical()


def _progress(line: str) -> None:
    print(f"  {line}", flush=True)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()
