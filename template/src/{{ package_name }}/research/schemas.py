"""The settings of each research component: one dataclass per option of `configs/model/`, `data/`,
`objective/`, `optim/` and `sched/`, registered with Hydra as `<name>_schema`.

A YAML option that lists its schema in its defaults (`defaults: [mlp_schema, _self_]`) is typed by it: a
misspelled key or a wrongly typed value is refused while the config is composed. What types cannot say goes
in the schema's `problems()`, which the loop calls before any data is loaded: one line per mistake, saying what
to pass instead. A data schema also tells `train_samples()`, so that the batch size can be checked early and
the reproducibility proof can stop a run in the middle of an epoch.

This module imports no torch: composing a config (to name a run, or plan a sweep) stays fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from .datasets import pydoc_topics

PACKAGE = (__package__ or __name__).partition(".")[0]


# --- Models --------------------------------------------------------------------------------------------------
@dataclass
class MLPConfig:
    _target_: str = f"{PACKAGE}.research.models.mlp.MLP"
    in_features: int = MISSING
    num_classes: int = MISSING
    hidden_sizes: list[int] = field(default_factory=lambda: [128, 128])
    dropout: float = 0.1

    def problems(self) -> list[str]:
        found = _dropout_problems(self.dropout)
        if any(size < 1 for size in self.hidden_sizes):
            found.append(f"model.hidden_sizes={self.hidden_sizes} must all be >= 1, e.g. model.hidden_sizes=[128,128]")
        return found


@dataclass
class CharTransformerConfig:
    _target_: str = f"{PACKAGE}.research.models.char_transformer.CharTransformer"
    vocab_size: int = MISSING
    context_length: int = MISSING
    width: int = 128
    depth: int = 3
    heads: int = 4
    dropout: float = 0.0

    def problems(self) -> list[str]:
        found = _dropout_problems(self.dropout)
        if min(self.width, self.depth, self.heads) < 1:
            found.append("model.width, model.depth and model.heads must all be >= 1")
        elif self.width % self.heads:
            found.append(f"model.width={self.width} must be a multiple of model.heads={self.heads}")
        return found


def _dropout_problems(dropout: float) -> list[str]:
    if 0 <= dropout < 1:
        return []
    return [f"model.dropout={dropout} must lie in [0, 1): it is the probability of dropping a unit, e.g. 0.1"]


# --- Data ----------------------------------------------------------------------------------------------------
@dataclass
class DigitsConfig:
    _target_: str = f"{PACKAGE}.research.datasets.digits.Digits"
    batch_size: int = 64
    eval_batch_size: int = 512
    val_fraction: float = 0.2
    test_fraction: float = 0.0  # > 0: a held-out test split, taken from the training samples
    split_seed: int = 0
    noise_std: float = 0.05
    # Facts about the dataset, known before loading it so that the checks can test the batch size early.
    num_samples: int = 1797
    num_features: int = 64
    num_classes: int = 10

    def train_samples(self) -> int:
        return (
            self.num_samples
            - round(self.num_samples * self.val_fraction)
            - round(self.num_samples * self.test_fraction)
        )

    def problems(self) -> list[str]:
        found = []
        if not 0 < self.val_fraction < 1:
            found.append(f"data.val_fraction={self.val_fraction} must be between 0 and 1, e.g. data.val_fraction=0.2")
        elif not 0 <= self.test_fraction < 1 - self.val_fraction:
            found.append(
                f"data.test_fraction={self.test_fraction} must be >= 0 and leave training samples beside "
                f"data.val_fraction={self.val_fraction}, e.g. data.test_fraction=0.1"
            )
        if not 0 <= self.noise_std < math.inf:
            found.append(f"data.noise_std={self.noise_std} must be finite and >= 0 (0 turns the noise off)")
        return found


@dataclass
class PydocTextConfig:
    _target_: str = f"{PACKAGE}.research.datasets.char_text.PydocText"
    batch_size: int = 32
    eval_batch_size: int = 64
    context_length: int = 64
    val_every: int = 10
    test_every: int = 0  # > 0: every test_every-th non-validation topic is held out as a test split
    # A fact about the text, read from this Python's copy of it while composing (a few milliseconds).
    vocab_size: int = field(default_factory=lambda: len(pydoc_topics.alphabet()))

    def train_samples(self) -> int:
        train, _, _ = pydoc_topics.held_out_splits(self.val_every, self.test_every)
        return pydoc_topics.windows(len(train), self.context_length)

    def problems(self) -> list[str]:
        found = []
        if self.context_length < 1:
            found.append(f"data.context_length={self.context_length} must be >= 1, e.g. data.context_length=64")
        if self.val_every < 2:
            found.append(f"data.val_every={self.val_every} must be >= 2 (every val_every-th topic is held out)")
        if self.test_every == 1 or self.test_every < 0:
            found.append(
                f"data.test_every={self.test_every} must be 0 (no test split) or >= 2, e.g. data.test_every=10"
            )
        return found


# --- Objectives ----------------------------------------------------------------------------------------------
@dataclass
class ClassificationConfig:
    _target_: str = f"{PACKAGE}.research.objectives.classification.Classification"


@dataclass
class LanguageModelingConfig:
    _target_: str = f"{PACKAGE}.research.objectives.language_modeling.LanguageModeling"


# --- Optimizers (built later with the model's parameters) ----------------------------------------------------
@dataclass
class AdamWConfig:
    _target_: str = "torch.optim.AdamW"
    _partial_: bool = True
    lr: float = 3e-3
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    weight_decay: float = 1e-4

    def problems(self) -> list[str]:
        found = _optimizer_problems(self.lr, self.weight_decay)
        if len(self.betas) != 2 or not all(0 <= beta < 1 for beta in self.betas):
            found.append(f"optim.betas={self.betas} must be two numbers in [0, 1), e.g. optim.betas=[0.9,0.999]")
        return found


@dataclass
class SGDConfig:
    _target_: str = "torch.optim.SGD"
    _partial_: bool = True
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 1e-4

    def problems(self) -> list[str]:
        found = _optimizer_problems(self.lr, self.weight_decay)
        if not 0 <= self.momentum < 1:
            found.append(f"optim.momentum={self.momentum} must lie in [0, 1), e.g. optim.momentum=0.9")
        return found


def _optimizer_problems(lr: float, weight_decay: float) -> list[str]:
    found = []
    if not (lr > 0 and math.isfinite(lr)):  # also false for nan
        found.append(f"optim.lr={lr} must be a finite number > 0: pass e.g. optim.lr=3e-3")
    if not (weight_decay >= 0 and math.isfinite(weight_decay)):
        found.append(f"optim.weight_decay={weight_decay} must be a finite number >= 0, e.g. optim.weight_decay=1e-4")
    return found


# --- Learning-rate schedules (built later with the optimizer) ------------------------------------------------
@dataclass
class WarmupCosineConfig:
    _target_: str = f"{PACKAGE}.research.schedules.warmup_cosine"
    _partial_: bool = True
    warmup_steps: int = 50
    total_steps: int = "${trainer.max_steps}"  # type: ignore[assignment]
    min_lr_ratio: float = 0.05


@dataclass
class ConstantConfig:
    _target_: str = f"{PACKAGE}.research.schedules.constant"
    _partial_: bool = True
    warmup_steps: int = 0


SCHEMAS = {
    "model": {"mlp": MLPConfig, "char_transformer": CharTransformerConfig},
    "data": {"digits": DigitsConfig, "pydoc_text": PydocTextConfig},
    "objective": {"classification": ClassificationConfig, "language_modeling": LanguageModelingConfig},
    "optim": {"adamw": AdamWConfig, "sgd": SGDConfig},
    "sched": {"warmup_cosine": WarmupCosineConfig, "constant": ConstantConfig},
}


def register(store: ConfigStore) -> None:
    for group, options in SCHEMAS.items():
        for name, schema in options.items():
            store.store(group=group, name=f"{name}_schema", node=schema)
