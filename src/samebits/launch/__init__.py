"""Launching runs as jobs of an exact, pushed commit (the project's jobs/job.sh)."""
