"""The proof's comparison finds the first difference, so a broken run cannot pass as identical."""

from __future__ import annotations

import random
import subprocess
import sys
from importlib import import_module

from library.helpers.project import PACKAGE, ROOT

reproducibility = import_module("samebits.proof.reproducibility")
RunResult = import_module("samebits.proof.chains").RunResult


def run(params: str, *losses: float, problems: list[str] | None = None) -> object:
    rows = [{"step": 10 * (i + 1), "train/loss": loss} for i, loss in enumerate(losses)]
    return RunResult(params, rows, problems or [])


def test_identical_runs_pass() -> None:
    assert reproducibility.compare("p", run("a" * 64, 0.5, 0.25), run("a" * 64, 0.5, 0.25)).identical


def test_a_one_ulp_loss_difference_fails_at_its_step() -> None:
    one_ulp_more = 0.25000000000000006
    verdict = reproducibility.compare("p", run("a" * 64, 0.5, 0.25), run("a" * 64, 0.5, one_ulp_more))
    assert not verdict.identical
    assert verdict.first_difference == "step 20 train/loss: 0.25 vs 0.25000000000000006"


def test_a_different_hash_a_missing_or_repeated_line_or_a_noticed_problem_fails() -> None:
    reference = run("a" * 64, 0.5, 0.25)
    assert not reproducibility.compare("p", reference, run("b" * 64, 0.5, 0.25)).identical
    assert reproducibility.compare("p", reference, run("a" * 64, 0.5)).first_difference == "step 20 step: 20 vs None"
    repeated = run("a" * 64, 0.5, 0.25)
    repeated.rows.insert(1, dict(repeated.rows[0]))
    assert not reproducibility.compare("p", reference, repeated).identical
    noticed = reproducibility.compare("p", reference, run("a" * 64, 0.5, 0.25, problems=["temporary files left"]))
    assert noticed.first_difference == "temporary files left"


def test_rng_states_that_differ_at_the_end_fail_unless_one_run_did_not_record_them() -> None:
    reference = run("a" * 64, 0.5, 0.25)
    reference.rng_sha256 = "c" * 64
    candidate = run("a" * 64, 0.5, 0.25)
    candidate.rng_sha256 = "d" * 64
    verdict = reproducibility.compare("p", reference, candidate)
    assert verdict.first_difference == f"RNG state at the end: {'c' * 12} vs {'d' * 12}"
    candidate.rng_sha256 = None  # a summary.json written before rng_sha256 existed
    assert reproducibility.compare("p", reference, candidate).identical


def test_interruption_points_fall_mid_epoch() -> None:
    schedule = import_module("samebits.proof.chains").Schedule(max_steps=600, ckpt_every=100, batches_per_epoch=22)
    for seed in range(20):
        step = schedule.mid_epoch_step(random.Random(seed))
        assert 150 <= step < 450 and step % 22 and step % 100
    assert schedule.checkpoint_steps() == [100, 200, 300, 400, 500, 600]


def test_without_a_known_epoch_length_stops_still_avoid_checkpoints() -> None:
    schedule = import_module("samebits.proof.chains").Schedule(max_steps=60, ckpt_every=20, batches_per_epoch=None)
    stops = {schedule.mid_epoch_step(random.Random(seed)) for seed in range(50)}
    assert stops and all(15 <= step < 45 and step % 20 for step in stops)


def test_the_language_models_schedule_is_read_from_its_text() -> None:
    schedule = reproducibility.schedule_of(["experiment=char_transformer"])
    assert schedule.batches_per_epoch > 100  # about 6,600 windows of 64 characters, 32 per batch


def test_the_proofs_default_run_crosses_epochs_and_has_a_checkpoint_before_each_stop() -> None:
    schedule = reproducibility.schedule_of(reproducibility.PROOF_SCHEDULE)
    assert schedule.max_steps >= 5 * schedule.batches_per_epoch  # resumes land in several different epochs
    stops = {schedule.mid_epoch_step(random.Random(seed)) for seed in range(200)}
    assert all(step % schedule.batches_per_epoch for step in stops)  # in the middle of an epoch
    # Proof 7 damages the checkpoint at the stop: an earlier one must be there to fall back to.
    assert all(any(c < step for c in schedule.checkpoint_steps()) for step in stops)


def test_a_bad_override_is_refused_in_one_line_before_any_run() -> None:
    command = [sys.executable, "-m", PACKAGE, "proof", "--only", "1", "optim.nope=3"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2
    assert done.stderr.startswith("error: Could not override 'optim.nope'"), done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert "proving with" not in done.stdout


def test_the_third_kill_comes_after_the_checkpoint_the_run_resumes_from() -> None:
    """A kill while saving step 240 leaves step 200 (not 190) as the latest checkpoint: the next stop is after it."""
    chains = import_module("samebits.proof.chains")
    schedule = chains.Schedule(max_steps=240, ckpt_every=50, batches_per_epoch=22)
    for seed in range(2000):
        first, saving, third = chains.kill_points(schedule, random.Random(seed))
        resumed_at = max([0, *(step for step in schedule.checkpoint_steps() if step < saving)])
        assert first < saving and resumed_at < third < schedule.max_steps, (seed, first, saving, third)
        assert third > schedule.ckpt_every, (seed, third)  # so the relaunch resumes from a checkpoint


def test_the_in_flight_kill_lands_before_any_later_save_and_after_a_checkpoint_to_resume_from() -> None:
    """Proof 8 holds the write of `saved` and pauses the loop at `step`: a save due in between would wait for the
    held write forever, and a relaunch must resume from a checkpoint, not from scratch."""
    chains = import_module("samebits.proof.chains")
    for schedule in (
        chains.Schedule(max_steps=240, ckpt_every=50, batches_per_epoch=22, eval_every=50),
        chains.Schedule(max_steps=600, ckpt_every=100, batches_per_epoch=22, eval_every=30),
        chains.Schedule(max_steps=60, ckpt_every=20, batches_per_epoch=None),
    ):
        for seed in range(500):
            saved, step = chains.in_flight_points(schedule, random.Random(seed))
            assert saved in schedule.checkpoint_steps() and saved > schedule.checkpoint_steps()[0], (seed, saved)
            evaluations = schedule.eval_every or schedule.ckpt_every
            saves = [*schedule.checkpoint_steps(), *range(evaluations, schedule.max_steps, evaluations)]
            assert step is not None and saved < step < min(s for s in saves if s > saved), (schedule, seed, step)
    every_step = chains.Schedule(max_steps=10, ckpt_every=1, batches_per_epoch=None)
    assert chains.in_flight_points(every_step, random.Random(0)) == (1, None)


def test_the_fork_server_imports_what_the_research_code_instantiates_and_no_tracker() -> None:
    composed = import_module("samebits.composition").composed
    cfg = composed(["experiment=char_transformer", "logger=[jsonl,wandb]", "run_name=probe"], resolve=False)
    modules = reproducibility.instantiated_modules(cfg)
    assert f"{PACKAGE}.research.datasets.char_text" in modules and "torch.optim" in modules
    assert not [module for module in modules if "tracking" in module], modules
