"""Imported by the fork server of test_forks.py before any run, as the proof's server imports torch."""

import numpy  # noqa: F401
import torch  # noqa: F401
