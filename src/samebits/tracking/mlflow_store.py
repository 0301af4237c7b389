"""The local MLflow store: one sqlite database under the runs folder, made and migrated once.

Many runs opening a new sqlite store at once race on creating its tables ("database is locked"), so the store
is made under an exclusive `flock` beside it: by the launcher before it submits, or by the first run started
by hand. It is switched to write-ahead logging, so that readers (`mlflow ui`, `collect --from mlflow`) never
block a run that writes. MLflow's own sessions wait up to 20 s for a lock held by another run
(`PRAGMA busy_timeout`); the tracker's `timeout_s` bounds a longer wait. Keep the store on a local disk: sqlite
locking is unreliable on NFS.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from ..core.locks import exclusive

SQLITE = "sqlite:///"


def sqlite_path(tracking_uri: str) -> Path | None:
    return Path(tracking_uri.removeprefix(SQLITE)) if tracking_uri.startswith(SQLITE) else None


def prepare(tracking_uri: str, artifact_location: str) -> None:
    """Make and migrate a local sqlite store unless it exists; a store behind a server needs nothing."""
    path = sqlite_path(tracking_uri)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(path.with_name(path.name + ".lock")):
        if path.exists() and path.stat().st_size > 0:
            return
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        made = path.with_name(path.name + ".new")  # built aside: a kill while migrating leaves no half store
        made.unlink(missing_ok=True)
        store = SqlAlchemyStore(SQLITE + str(made), artifact_location)
        store.engine.dispose()
        with contextlib.closing(sqlite3.connect(made)) as connection:
            connection.execute("PRAGMA journal_mode=WAL")
        os.replace(made, path)
