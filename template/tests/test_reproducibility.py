"""The proof's comparison finds the first difference, so a broken run cannot pass as identical."""

from __future__ import annotations

from importlib import import_module

from conftest import PACKAGE

reproducibility = import_module(f"{PACKAGE}.reproducibility")
RunResult = reproducibility.RunResult


def run(params: str, **losses: float) -> object:
    return RunResult(params, {int(step[1:]): {"train/loss": loss} for step, loss in losses.items()})


def test_identical_runs_pass() -> None:
    verdict = reproducibility.compare("p", run("a" * 64, s10=0.5, s20=0.25), run("a" * 64, s10=0.5, s20=0.25))
    assert verdict.identical


def test_a_one_ulp_loss_difference_fails_at_its_step() -> None:
    verdict = reproducibility.compare(
        "p", run("a" * 64, s10=0.5, s20=0.25), run("a" * 64, s10=0.5, s20=0.25000000000000006)
    )
    assert not verdict.identical
    assert verdict.first_difference == "step 20 train/loss: 0.25 vs 0.25000000000000006"


def test_a_different_hash_or_a_missing_step_fails() -> None:
    assert not reproducibility.compare("p", run("a" * 64, s10=0.5), run("b" * 64, s10=0.5)).identical
    missing = reproducibility.compare("p", run("a" * 64, s10=0.5, s20=0.25), run("a" * 64, s10=0.5))
    assert missing.first_difference == "step 20 train/loss: 0.25 vs None"
