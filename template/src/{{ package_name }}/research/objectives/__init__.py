"""Objectives: how a batch becomes a loss, and which metrics evaluation reports; one class per file, each built
from a `configs/objective/` option. Each implements `samebits.Objective`: the loop calls only what it names.
"""

from samebits import Objective

__all__ = ["Objective"]
