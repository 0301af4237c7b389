"""Configs composed as a run composes them."""

from __future__ import annotations

from omegaconf import DictConfig
from samebits import composition
from samebits.core import naming  # naming registers the run-name resolver

assert naming


def composed(*overrides: str) -> DictConfig:
    """The config a run with these overrides gets, resolved (its run name included) as during a real run."""
    return composition.composed(list(overrides))
