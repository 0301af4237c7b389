"""The reproducibility proof passes for the second task and with the trainer switches, and fails (in exactly the
right rows) when determinism is broken on purpose in a copy of the library.

Each proof starts about two dozen training processes, so these are slow. A broken copy is the library's package
copied into a temporary folder with one line changed, put first on PYTHONPATH: the proof and every training
process it starts import it instead of the real one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import samebits

from library.helpers.project import PACKAGE, ROOT

pytestmark = pytest.mark.slow

ALL_PROOFS = {"1", "2", "3", "4", "5", "6", "7", "8"}


def prove(*args: str, expect: int, env: dict[str, str] | None = None) -> dict[str, str]:
    """Run the project's proof (`<package> proof args`); return each table row's label and result."""
    command = [sys.executable, "-m", PACKAGE, "proof", *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == expect, done.stdout[-4000:] + done.stderr[-4000:]
    rows = re.findall(r"^(\d .+?)\s{2,}\S+\s+\S+\s+(identical|DIFFERENT)\b", done.stdout, flags=re.MULTILINE)
    assert rows, done.stdout
    assert "ERROR: " not in done.stdout, done.stdout  # a chain that crashed proves nothing, either way
    return dict(rows)


def broken_library(tmp_path: Path, module: str, line: str, replacement: str) -> dict[str, str]:
    """The environment of a process that imports a copy of samebits with one line of `module` changed."""
    copy = tmp_path / "broken" / "samebits"
    shutil.copytree(Path(samebits.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / module
    source = path.read_text()
    assert source.count(line) == 1, f"{line!r} is not in {module} exactly once"
    path.write_text(source.replace(line, replacement))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy.parent), os.environ.get("PYTHONPATH", "")])}


def test_the_language_model_passes_the_proof_too() -> None:
    """The second task through the same loop, shortened to 60 steps (three checkpoints, three evaluations)."""
    shortened = ["trainer.max_steps=60", "trainer.ckpt_every=20", "trainer.eval_every=20"]
    rows = prove("experiment=char_transformer", *shortened, expect=0)
    assert {label[0] for label in rows} == ALL_PROOFS
    assert set(rows.values()) == {"identical"}, rows


def test_the_proof_passes_in_bf16_with_accumulated_gradients() -> None:
    """Two trainer switches at once: bfloat16 autocast, and two micro-batches per step (under torchrun, the
    first of each window's backward passes skips DDP's gradient sync). On the default task: CPU autocast makes the
    language model's proof several times slower, past its per-run time limit on 2 cores."""
    rows = prove("trainer.precision=bf16", "trainer.accumulate_grad_batches=2", expect=0)
    assert {label[0] for label in rows} == ALL_PROOFS
    assert set(rows.values()) == {"identical"}, rows


# Proofs 1, 2, 3 and 7 come from one training chain: a plain repeat and three resumes.
ONE_CHAIN = "1,2,3,7"
ONLY_THE_RESUMES_RED = {"1": "identical", "2": "DIFFERENT", "3": "DIFFERENT", "7": "DIFFERENT"}


def by_number(rows: dict[str, str]) -> dict[str, str]:
    return {label[0]: result for label, result in rows.items()}


RNG_RESTORES = {
    "torch": 'torch.set_rng_state(state["torch"])',  # drawn from by dropout
    "numpy": 'np.random.set_state((numpy["kind"], keys, numpy["pos"], numpy["has_gauss"], numpy["gauss"]))',
    "python": 'random.setstate((python["version"], tuple(python["internal"].tolist()), python["gauss"]))',
}


def test_not_restoring_torchs_rng_breaks_exactly_the_resume_proofs(tmp_path: Path) -> None:
    """All eight proofs: the two without a resume stay identical, every one with a resume turns red."""
    env = broken_library(tmp_path, "core/determinism.py", RNG_RESTORES["torch"], "pass  # broken")
    rows = prove(expect=1, env=env)
    identical = {label for label, result in rows.items() if result == "identical"}
    assert {label[0] for label in rows} == ALL_PROOFS
    assert identical == {"1 two identical runs", "6 torchrun x2: two runs"}, rows


@pytest.mark.parametrize("generator", ["numpy", "python"])
def test_not_restoring_numpys_or_pythons_rng_is_caught_by_the_canary(tmp_path: Path, generator: str) -> None:
    """The bundled loop draws only from torch: the proof's canary catches these two, in the resume proofs only.
    Proofs 1, 2, 3 and 7 (one training chain) suffice: the full eight run for torch's generator above."""
    env = broken_library(tmp_path, "core/determinism.py", RNG_RESTORES[generator], "pass  # broken")
    assert by_number(prove("--only", ONE_CHAIN, expect=1, env=env)) == ONLY_THE_RESUMES_RED


def test_not_skipping_the_consumed_batches_breaks_exactly_the_resume_proofs(tmp_path: Path) -> None:
    start = "self.sampler.epoch, self.sampler.start = self.epoch, self.batch"
    env = broken_library(tmp_path, "core/batches.py", start, start.replace("self.batch", "0"))
    assert by_number(prove("--only", ONE_CHAIN, expect=1, env=env)) == ONLY_THE_RESUMES_RED


def test_an_unseeded_run_fails_the_first_proof(tmp_path: Path) -> None:
    unseeded = "torch.manual_seed(int.from_bytes(os.urandom(4)))"
    env = broken_library(tmp_path, "core/determinism.py", "torch.manual_seed(seed)", unseeded)
    assert prove("--only", "1", expect=1, env=env) == {"1 two identical runs": "DIFFERENT"}
