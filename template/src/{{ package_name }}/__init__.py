"""Experiments run from one config-driven training loop: `python -m <package>.train [overrides]`."""
