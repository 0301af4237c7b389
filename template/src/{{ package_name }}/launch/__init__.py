"""Launching runs as jobs of an exact, pushed commit (see jobs/job.sh). Maintained by the template."""
