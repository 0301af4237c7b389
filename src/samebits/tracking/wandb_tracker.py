"""Weights & Biases: one wandb run per run folder, reopened by every attempt (`logger=[jsonl,wandb]`).

- Offline unless WANDB_API_KEY is set (`mode: auto`). Online, a start that fails or takes longer than
  `init_timeout_s` falls back to offline with one warning; the run's files can be uploaded later.
- The wandb id is made once and kept in `<run folder>/trackers.json`: a resumed, requeued or resubmitted attempt
  reopens it with `resume="allow"`. Offline, wandb ignores `resume`, and each attempt writes its own folder under
  `<run folder>/wandb/`; `wandb sync <run folder>/wandb/offline-run-*` uploads them into the one run, in order.
- Each row carries `global_step`, the x-axis of every metric, so curves stay continuous across attempts.
- The config goes into the wandb run's config; the main tag, purpose and provenance into its tags, group and
  summary. Secrets come only from the environment, and wandb reads them there itself.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.states import AttemptState
from ..project import current
from . import RunInfo
from .background import RemoteTracker, Row, store_id, stored_id
from .wandb_files import last_step

log = logging.getLogger(__name__)
MODES = ("auto", "online", "offline")


@dataclass
class WandbConfig:
    _target_: str = "samebits.tracking.wandb_tracker.WandbTracker"
    project: str | None = None  # None: the package name
    entity: str | None = None
    mode: str = "auto"  # auto: online when WANDB_API_KEY is set, else offline; or online, offline
    init_timeout_s: float = 30.0
    timeout_s: float = 120.0  # a call unanswered this long switches the tracker off for the attempt


def WandbTracker(  # noqa: N802  (built by instantiate like a class)
    run: RunInfo,
    project: str | None = None,
    entity: str | None = None,
    mode: str = "auto",
    init_timeout_s: float = 30.0,
    timeout_s: float = 120.0,
) -> RemoteTracker:
    if mode not in MODES:
        raise ValueError(f"logger.wandb.mode={mode} is not one of {', '.join(MODES)}")
    return RemoteTracker(WandbService(run, project or current().package, entity, mode, init_timeout_s), run, timeout_s)


class WandbService:
    def __init__(self, run: RunInfo, project: str, entity: str | None, mode: str, init_timeout_s: float) -> None:
        self.info, self.project, self.entity, self.mode = run, project, entity, mode
        self.init_timeout_s = init_timeout_s
        self.run: Any = None

    def open(self) -> int:
        import wandb

        run_id = stored_id(self.info.run_dir, "wandb")
        if run_id is None:  # made here, from the OS's randomness: the training RNGs are never drawn from
            run_id = secrets.token_hex(6)
            store_id(self.info.run_dir, "wandb", run_id)
        held = last_step(self.info.run_dir / "wandb", run_id)
        online = self.mode == "online" or (self.mode == "auto" and os.environ.get("WANDB_API_KEY"))
        if online:
            try:
                self.run = self._init(wandb, run_id, "online")
            except Exception as error:
                log.warning(
                    "wandb could not start online (%s): logging offline to %s; upload it later with wandb sync",
                    str(error).splitlines()[0] if str(error) else type(error).__name__,
                    self.info.run_dir / "wandb",
                )
                wandb.teardown()  # the failed start still holds the run id in wandb's service process
        if self.run is None:
            self.run = self._init(wandb, run_id, "offline")
        self.run.define_metric("global_step")
        self.run.define_metric("*", step_metric="global_step")
        return held

    def _init(self, wandb: Any, run_id: str, mode: str) -> Any:
        return wandb.init(
            project=self.project,
            entity=self.entity,
            id=run_id,
            resume="allow",
            mode=mode,
            dir=self.info.run_dir,
            name=self.info.name,
            group=self.info.main_tag,
            tags=[self.info.main_tag, *self.info.tags],
            config=self.info.config,
            settings=wandb.Settings(
                init_timeout=self.init_timeout_s,
                console="off",  # the run's own log is train.log; wandb must not wrap stdout
                silent=True,
                save_code=False,
            ),
        )

    def record(self, provenance: Mapping[str, Any]) -> None:
        self.run.summary.update({"provenance": dict(provenance)})

    def send(self, rows: list[Row]) -> None:
        for row in rows:
            self.run.log({key: value for key, value in row.items() if key != "step"} | {"global_step": row["step"]})

    def close(self, state: AttemptState) -> None:
        import wandb

        self.run.summary.update({"state": state})
        if state != "finished":
            self.run.mark_preempting()
        self.run.finish(exit_code=0 if state == "finished" else 1)
        wandb.teardown()  # finish can return before wandb's service has written the last rows to the run's file
