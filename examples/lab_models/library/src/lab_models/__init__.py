"""A lab's shared models, used by experiment projects that pin this repository as a git submodule."""

from .residual import ResidualMLP

__all__ = ["ResidualMLP"]
