"""Launching runs as jobs of an exact, pushed commit (see jobs/job.sh). Maintained by the template."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]  # the checkout: src/<package>/launch/__init__.py
