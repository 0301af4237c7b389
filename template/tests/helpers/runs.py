"""Training runs in fresh processes (conftest.py's run_training), and the settings that make one short."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

RunTraining = Callable[..., subprocess.CompletedProcess[str]]

# The character-level transformer, cut down to a few seconds: two checkpoints and two evaluations.
SHORT_LM = [
    "experiment=char_transformer",
    "trainer.max_steps=20",
    "trainer.ckpt_every=10",
    "trainer.eval_every=10",
    "sched.warmup_steps=5",
    "model.width=32",
    "model.depth=1",
    "trainer.num_threads=1",
]
