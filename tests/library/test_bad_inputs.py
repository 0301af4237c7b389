"""Mistakes and faults, one row each: one line saying what to do, the documented exit code, no traceback, nothing
written outside the run folder, and no existing run or checkpoint damaged.

Every row runs in a fresh process, as users and launchers run the loop, against a copy of a runs folder that
holds a finished run and a paused one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import RunTraining

SHORT = ["trainer.max_steps=40", "sched.warmup_steps=5", "trainer.ckpt_every=10", "trainer.eval_every=20"]
KEEP_ALL = "trainer.keep_last=10"
TRAIN = [sys.executable, "-m", f"{PACKAGE}.train", "trainer.progress_bar=false"]
SWEEP = [sys.executable, "-m", f"{PACKAGE}.train", "--multirun", "trainer.progress_bar=false"]  # flags go first
CLI = [sys.executable, "-m", PACKAGE]
Prepare = Callable[[Path, Path], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def nothing(runs: Path, scratch: Path) -> Iterator[None]:
    yield


def damage(relative: str, content: bytes) -> Prepare:
    @contextlib.contextmanager
    def prepare(runs: Path, scratch: Path) -> Iterator[None]:
        (runs / relative).write_bytes(content)
        yield

    return prepare


def removed(relative: str) -> Prepare:
    @contextlib.contextmanager
    def prepare(runs: Path, scratch: Path) -> Iterator[None]:
        (runs / relative).unlink()
        yield

    return prepare


def config_file(relative: str, text: str) -> Prepare:
    """A config file the user wrote, in the scratch folder's config tree (rows find it with hydra.searchpath)."""

    @contextlib.contextmanager
    def prepare(runs: Path, scratch: Path) -> Iterator[None]:
        (scratch / "configs" / relative).write_text(text)
        yield

    return prepare


# Where `copier update` leaves both sides of a line that the user and the template changed.
CONFLICT = "<<<<<<< before updating\nseed: 0\n=======\nseed: 1\n>>>>>>> after updating\n"
CONFLICT_LINE = (ROOT / "configs" / "train.yaml").read_text().splitlines().index("seed: 0") + 1


@contextlib.contextmanager
def updated_with_a_conflict(runs: Path, scratch: Path) -> Iterator[None]:
    """The project's config tree as an update left it, with conflict markers in train.yaml (rows pass
    --config-path: the project's own configs stay as they are)."""
    shutil.copytree(ROOT / "configs", scratch / "updated")
    train = scratch / "updated" / "train.yaml"
    train.write_text(train.read_text().replace("seed: 0\n", CONFLICT, 1))
    yield


@contextlib.contextmanager
def locked_by_another_process(runs: Path, scratch: Path) -> Iterator[None]:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR);"
         "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0);"
         "os.pwrite(fd, b'pid 4242 on elsewhere since 2026-01-01T00:00:00+00:00', 0); print(flush=True);"
         "sys.stdin.read()", str(runs / "dev" / "paused" / "run.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    holder.stdout.readline()
    try:
        yield
    finally:
        holder.communicate("")


@contextlib.contextmanager
def read_only_folder(runs: Path, scratch: Path) -> Iterator[None]:
    folder = scratch / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield
        folder.chmod(0o755)
        return
    # root may write anywhere it has permission bits against it; only a read-only mount stops it
    mount = ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)]
    if subprocess.run(mount, capture_output=True).returncode:
        pytest.skip("cannot make a read-only folder here: root without permission to mount")
    try:
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@contextlib.contextmanager
def small_disk(runs: Path, scratch: Path) -> Iterator[None]:
    """A 256 kB file system: a run's config and provenance fit, its first checkpoint does not (ENOSPC)."""
    folder = scratch / "small-disk"
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode:
        pytest.skip("cannot mount a small file system here: needs root with permission to mount")
    try:
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@dataclass
class Row:
    args: list[str]
    code: int
    message: str
    env: dict[str, str] = field(default_factory=dict)
    prepare: Prepare = nothing
    command: list[str] = field(default_factory=lambda: TRAIN)
    touches: str | None = None  # the one run this row may write to (its checkpoints and lines must survive)
    file_size_limit: int | None = None


ROWS = {
    "lr-negative": Row(["optim.lr=-1"], 2, "error: optim.lr=-1.0 must be a finite number > 0"),
    "lr-nan": Row(["optim.lr=nan"], 2, "error: optim.lr=nan must be a finite number > 0"),
    "lr-inf": Row(["optim.lr=inf"], 2, "error: optim.lr=inf must be a finite number > 0"),
    "lr-text": Row(["optim.lr=fast"], 2, "error: Error merging override optim.lr=fast"),
    "betas-one": Row(["optim.betas=[0.9]"], 2, "error: optim.betas=[0.9] must be two numbers in [0, 1)"),
    "betas-range": Row(["optim.betas=[0.9,1.5]"], 2, "error: optim.betas=[0.9, 1.5] must be two numbers"),
    "weight-decay": Row(["optim.weight_decay=-1"], 2, "error: optim.weight_decay=-1.0 must be a finite number >= 0"),
    "momentum": Row(["optim=sgd", "optim.momentum=1.5"], 2, "error: optim.momentum=1.5 must lie in [0, 1)"),
    "noise-inf": Row(["data.noise_std=inf"], 2, "error: data.noise_std=inf must be finite and >= 0"),
    "dropout-two": Row(["model.dropout=2"], 2, "error: model.dropout=2.0 must lie in [0, 1)"),
    "dropout-negative": Row(["model.dropout=-0.1"], 2, "error: model.dropout=-0.1 must lie in [0, 1)"),
    "hidden-zero": Row(["model.hidden_sizes=[0]"], 2, "error: model.hidden_sizes=[0] must all be >= 1"),
    "plus-trainer-key": Row(["+trainer.foo=1"], 2, "error: trainer.foo is not a setting here: remove it"),
    "plus-model-key": Row(["+model.foo=1"], 2, "error: model.foo is not a setting here: remove it"),
    "plus-root-key": Row(["+foo=1"], 2, "error: foo is not a setting here: remove it"),
    "misspelled-key": Row(["optim.lrr=1e-3"], 2, "error: Could not override 'optim.lrr'. Key 'lrr' not in"),
    "no-steps": Row(["trainer.max_steps=0"], 2, "error: trainer.max_steps=0 must be >= 1"),
    "steps-text": Row(["trainer.max_steps=many"], 2, "error: Error merging override trainer.max_steps=many"),
    "stop-after-end": Row(["trainer.stop_at_step=5000"], 2, "error: trainer.stop_at_step=5000 must lie between"),
    "device": Row(["trainer.device=tpu"], 2, "error: trainer.device=tpu is not a device"),
    "batch-zero": Row(["data.batch_size=0"], 2, "error: data.batch_size=0 must be >= 1"),
    "batch-huge": Row(["data.batch_size=100000"], 2, "error: data.batch_size=100000 is larger than the training"),
    "val-fraction": Row(["data.val_fraction=1.5"], 2, "error: data.val_fraction=1.5 must be between 0 and 1"),
    "warmup-negative": Row(["sched.warmup_steps=-1"], 2, "error: sched.warmup_steps=-1 must lie between 0 and"),
    "main-tag-path": Row(["main_tag=a/b"], 2, "error: main_tag='a/b' is not a valid tag"),
    "no-purpose": Row(["tags=[]"], 2, "error: tags=[] must hold exactly one purpose"),
    "run-name-escape": Row(["run_name=../../escape"], 2, "error: run_name='../../escape' is not a folder name"),
    "run-name-slash": Row(["run_name=a/b"], 2, "error: run_name='a/b' is not a folder name"),
    "run-name-empty": Row(["run_name="], 2, "error: run_name='' is not a folder name"),
    "runs-dir-empty": Row([], 2, "error: paths.runs_dir is empty (RUNS_DIR is set to ''?)", env={"RUNS_DIR": ""}),
    "data-dir-empty": Row([], 2, "error: paths.data_dir is empty (DATA_DIR is set to ''?)", env={"DATA_DIR": ""}),
    "runs-dir-file": Row([], 2, "is a file, not a folder: point RUNS_DIR", env={"RUNS_DIR": "{scratch}/a-file"}),
    "data-dir-file": Row([], 2, "is a file, not a folder: point DATA_DIR", env={"DATA_DIR": "{scratch}/a-file"}),
    "runs-dir-read-only": Row(
        [], 2, "is not writable: point RUNS_DIR", env={"RUNS_DIR": "{scratch}/read-only"}, prepare=read_only_folder
    ),
    "no-such-experiment": Row(["experiment=no_such"], 2, "error: In 'train': Could not find 'experiment/no_such'"),
    "experiment-without-header": Row(
        ["hydra.searchpath=[file://{scratch}/configs]", "experiment=headless"],
        2,
        "configs/experiment/headless.yaml must start with the line `# @package _global_`",
    ),
    "experiment-not-yaml": Row(
        ["hydra.searchpath=[file://{scratch}/configs]", "experiment=broken"],
        2,
        "broken.yaml line 4: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at line 3)",
        prepare=config_file("experiment/broken.yaml", "# @package _global_\nmodel:\n  hidden_sizes: [64\n"),
    ),
    "update-conflict-markers": Row(
        ["--config-path={scratch}/updated"],
        2,
        f"train.yaml line {CONFLICT_LINE}: an update left conflict markers (<<<<<<<, =======, >>>>>>>) here: resolve",
        prepare=updated_with_a_conflict,
    ),
    "sweep-conflict-markers": Row(
        ["hydra.searchpath=[file://{scratch}/configs]", "experiment=conflicted", "seed=0,1"],
        2,
        "conflicted.yaml line 2: an update left conflict markers",
        prepare=config_file("experiment/conflicted.yaml", f"# @package _global_\n{CONFLICT}"),
        command=SWEEP,
    ),
    "override-grammar-launch": Row(
        ["launch", "--dry-run", "--", "optim.lr=[1,"],
        2,
        f"(check the override against `python -m {PACKAGE}.train --cfg job`)",
        command=CLI,
    ),
    "no-such-model": Row(["model=nonexistent"], 2, "error: In 'train': Could not find 'model/nonexistent'"),
    "heads-do-not-divide": Row(
        ["experiment=char_transformer", "model.width=30"], 2, "error: model.width=30 must be a multiple of model.heads"
    ),
    "sweep-bad-point": Row(["optim.lr=2e-3,-1"], 2, "error: sweep point 2 of 2: optim.lr=-1.0 must be", command=SWEEP),
    "sweep-unknown-key": Row(
        ["seed=0,1", "+trainer.foo=1"], 2, "error: sweep points 1, 2 of 2: trainer.foo", command=SWEEP
    ),
    "finished-name-other-config": Row(
        [*SHORT, "run_name=finished", "optim.lr=1e-3"],
        2,
        "error: run finished was started with other settings (optim.lr: 0.003 -> 0.001)",
    ),
    "paused-name-other-config": Row(
        [*SHORT, "run_name=paused", "seed=1"], 2, "error: run paused was started with other settings (seed: 0 -> 1)"
    ),
    "run-locked": Row(
        [*SHORT, "run_name=paused"],
        73,
        "/dev/paused is in use by pid 4242 on elsewhere",
        prepare=locked_by_another_process,
    ),
    "manifest-damaged": Row(
        [*SHORT, KEEP_ALL, "run_name=paused"],
        0,
        "manifest.json is damaged: checking each checkpoint by loading it instead",
        prepare=damage("dev/paused/checkpoints/manifest.json", b'{"step_0000'),
        touches="paused",
    ),
    "manifest-from-newer-samebits": Row(
        [*SHORT, KEEP_ALL, "run_name=paused"],
        0,
        "manifest.json is in format 3, from a newer samebits: update samebits",
        prepare=damage("dev/paused/checkpoints/manifest.json", b'{"format": 3}'),
        touches="paused",
    ),
    "disk-full": Row(
        [*SHORT, "run_name=paused"],
        74,
        "is full (File too large): free space, or set RUNS_DIR to a larger disk; the checkpoint at step 20 is kept",
        touches="paused",
        file_size_limit=100_000,
    ),
    "disk-full-for-real": Row(
        [*SHORT, "run_name=small"],
        74,
        "is full (No space left on device): free space, or set RUNS_DIR to a larger disk",
        env={"RUNS_DIR": "{scratch}/small-disk"},
        prepare=small_disk,
    ),
    "diverged": Row(
        [*SHORT, "optim.lr=1e6", "sched.warmup_steps=30", "trainer.ckpt_every=1", "run_name=diverged"],
        1,
        "error: the loss became non-finite (nan or inf) at step ",
        touches="diverged",
    ),
    "inputs-not-finite": Row(
        [*SHORT, "data.noise_std=1e39", "run_name=nan_inputs"],  # finite, but past float32: inputs are inf
        1,
        "error: the loss became non-finite (nan or inf) at step 1: before any update, so it comes from the data",
        touches="nan_inputs",
    ),
    "eval-config-not-yaml": Row(
        ["eval", "{runs}/dev/finished"],
        2,
        "config.yaml line 3: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at line 2): "
        "the run's saved config is damaged; restore it",
        prepare=damage("dev/finished/config.yaml", b"model:\n  hidden_sizes: [64\n"),
        command=CLI,
    ),
    "eval-config-not-settings": Row(
        ["eval", "{runs}/dev/finished"],
        2,
        "config.yaml holds a list, not settings: the run's saved config is damaged",
        prepare=damage("dev/finished/config.yaml", b"- model\n"),
        command=CLI,
    ),
    "sample-config-cut-short": Row(
        ["sample", "{runs}/dev/finished"],
        2,
        "config.yaml lacks the data settings: the run's saved config is damaged",
        prepare=damage("dev/finished/config.yaml", b"model:\n  hidden_sizes:\n  - 64\n"),
        command=CLI,
    ),
    "reproduce-without-metrics": Row(
        ["reproduce", "{runs}/dev/finished"],
        2,
        "has no metrics.jsonl: there is nothing to compare a reproduction with",
        prepare=removed("dev/finished/metrics.jsonl"),
        command=CLI,
    ),
    "reproduce-not-a-run": Row(["reproduce", "{scratch}"], 2, "has no provenance.json", command=CLI),
    "reproduce-zero-steps": Row(
        ["reproduce", "{runs}/dev/finished", "--steps", "0"], 2, "error: --steps must be at least 1", command=CLI
    ),
}


@pytest.fixture(scope="module")
def existing_runs(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("existing-runs")
    assert run_training(runs, *SHORT, "run_name=finished").returncode == 0
    assert run_training(runs, *SHORT, "run_name=paused", "trainer.stop_at_step=20").returncode == 75
    return runs


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        for path in sorted(folder.rglob("*"))
        if "__pycache__" not in path.parts
    }


def outside_runs(scratch: Path) -> dict[str, object]:
    """What a stray write could reach: the project's top level, its code and configs, and the scratch folder."""
    return {
        "project": sorted(path.name for path in ROOT.iterdir()),
        "src": fingerprint(ROOT / "src"),
        "configs": fingerprint(ROOT / "configs"),
        "scratch": sorted(path.name for path in scratch.iterdir()),
    }


@pytest.mark.parametrize("name", ROWS)
def test_each_mistake_and_fault_ends_in_one_line(
    name: str, existing_runs: Path, data_dir: Path, tmp_path: Path
) -> None:
    row, runs, scratch = ROWS[name], tmp_path / "runs", tmp_path / "scratch"
    shutil.copytree(existing_runs, runs)
    (scratch / "configs" / "experiment").mkdir(parents=True)
    (scratch / "configs" / "experiment" / "headless.yaml").write_text("optim:\n  lr: 0.01\n")
    (scratch / "a-file").write_text("not a folder\n")

    def filled(text: str) -> str:
        return text.replace("{runs}", str(runs)).replace("{scratch}", str(scratch))

    env = {**os.environ, "RUNS_DIR": str(runs), "DATA_DIR": str(data_dir)}
    env |= {key: filled(value) for key, value in row.env.items()}
    limit = row.file_size_limit
    with row.prepare(runs, scratch):
        runs_before, outside_before = fingerprint(runs), outside_runs(scratch)
        done = subprocess.run(
            [*row.command, *map(filled, row.args)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))) if limit else None,
        )  # fmt: skip
        runs_after, outside_after = fingerprint(runs), outside_runs(scratch)

    output = done.stdout + done.stderr
    assert done.returncode == row.code, output
    assert row.message in output, output
    assert "Traceback" not in output
    if row.code:
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert outside_after == outside_before
    if row.touches is None:
        assert runs_after == runs_before
        return
    kept_elsewhere = {k: v for k, v in runs_before.items() if not k.startswith(f"dev/{row.touches}")}
    assert {k: v for k, v in runs_after.items() if not k.startswith(f"dev/{row.touches}")} == kept_elsewhere
    run_dir = runs / "dev" / row.touches
    for checkpoint_name, digest in runs_before.items():  # every checkpoint there was is still there, unchanged
        if checkpoint_name.endswith(".pt"):
            assert runs_after[checkpoint_name] == digest
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == ("finished" if row.code == 0 else "failed")
    for checkpoint_file in (run_dir / "checkpoints").glob("step_*.pt"):
        model = torch.load(checkpoint_file, weights_only=True)["model"]
        assert all(torch.isfinite(tensor).all() for tensor in model.values())  # no diverged state was saved
