"""`<package> sample RUN_DIR`: text from a language-model run, the same for the same seed; one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.project import PACKAGE, ROOT


def sample(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", PACKAGE, "sample", *args], capture_output=True, text=True, cwd=ROOT)


def test_the_same_seed_gives_the_same_text(lm_run: Path) -> None:
    first = sample(str(lm_run), "--chars", "80", "--seed", "1", "--prompt", "The ")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("The ") and len(first.stdout) == len("The ") + 80 + 1  # and print's newline
    assert sample(str(lm_run), "--chars", "80", "--seed", "1", "--prompt", "The ").stdout == first.stdout
    assert sample(str(lm_run), "--chars", "80", "--seed", "2", "--prompt", "The ").stdout != first.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prompt", "5 €"], "error: the prompt cannot be encoded: characters not in the text's alphabet: '€'"),
        (["--chars", "0"], "error: --chars must be at least 1, not 0"),
    ],
)
def test_bad_arguments_fail_in_one_line(lm_run: Path, args: list[str], message: str) -> None:
    done = sample(str(lm_run), *args)
    assert done.returncode == 2
    assert done.stderr.startswith(message) and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_run_that_is_not_a_language_model_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(f"data:\n  _target_: {PACKAGE}.research.datasets.digits.Digits\n")
    done = sample(str(tmp_path))
    assert done.returncode == 2
    assert (
        done.stderr.startswith(f"error: {tmp_path} is not a language-model run") and len(done.stderr.splitlines()) == 1
    )
    missing = sample(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "has no config.yaml" in missing.stderr


def test_a_run_without_a_checkpoint_is_refused_in_one_line(lm_run: Path, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_bytes((lm_run / "config.yaml").read_bytes())  # the run, before its first save
    done = sample(str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == f"error: {tmp_path} has no checkpoint yet: train it first (checkpoints every " \
        "trainer.ckpt_every steps)\n"  # fmt: skip
