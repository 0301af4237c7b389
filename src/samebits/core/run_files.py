"""Every file of a run folder, named in one place: what training, the launcher, the analysis and the proof read.

runs/<main_tag>/<run_name>/
  config.yaml       the resolved config (written once; its identity settings name the run)
  provenance.json   where the run came from: commit, lock, library, host (dirty.patch beside it if dirty)
  attempts.jsonl    what may have changed at each attempt after the first (host, restart, time)
  status.json       how the latest attempt stands (core/states.py), rewritten on a heartbeat
  summary.json      once finished: params_sha256, rng_sha256, the final metrics
  metrics.jsonl     one line per logged step (the jsonl tracker)
  train.log         the log of every attempt
  eval.json         what `<package> eval` measured
  checkpoints/      step_NNNNNN.pt, manifest.json (their checksums and the latest), best.json
  run.lock          held by the training process (core/lock_holder.py)
  launch.json       the launch record, written by launchers only (launch/records.py); launch.lock its lease
  job.log           a local job's output (launch/local.py)
  trackers.json     each remote tracker's id for this run, so that every attempt reopens it
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIG = "config.yaml"
PROVENANCE = "provenance.json"
ATTEMPTS = "attempts.jsonl"
DIRTY_PATCH = "dirty.patch"
STATUS = "status.json"
SUMMARY = "summary.json"
METRICS = "metrics.jsonl"
LOG = "train.log"
EVAL = "eval.json"
CHECKPOINTS = "checkpoints"
LOCK = "run.lock"
LAUNCH_RECORD = "launch.json"
LAUNCH_LEASE = "launch.lock"
JOB_LOG = "job.log"
TRACKER_IDS = "trackers.json"

# What tells a folder is a run's: training writes the first two, a launcher the third.
RECORDS = (STATUS, CONFIG, LAUNCH_RECORD)


@dataclass(frozen=True)
class RunFiles:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def provenance(self) -> Path:
        return self.root / PROVENANCE

    @property
    def attempts(self) -> Path:
        return self.root / ATTEMPTS

    @property
    def dirty_patch(self) -> Path:
        return self.root / DIRTY_PATCH

    @property
    def status(self) -> Path:
        return self.root / STATUS

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def metrics(self) -> Path:
        return self.root / METRICS

    @property
    def log(self) -> Path:
        return self.root / LOG

    @property
    def eval(self) -> Path:
        return self.root / EVAL

    @property
    def checkpoints(self) -> Path:
        return self.root / CHECKPOINTS

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def launch_record(self) -> Path:
        return self.root / LAUNCH_RECORD

    @property
    def launch_lease(self) -> Path:
        return self.root / LAUNCH_LEASE

    @property
    def job_log(self) -> Path:
        return self.root / JOB_LOG

    @property
    def tracker_ids(self) -> Path:
        return self.root / TRACKER_IDS
