"""Provenance: which code, dependencies, machine and command produced a run, in its `provenance.json`.

It records the git commit (with branch, remote, and a dirty flag with a hash of the diff), every submodule's SHA,
samebits' version and the commit and local changes of its checkout,
the sha256 of uv.lock, the Python/torch/CUDA versions and thread count, the host, the Slurm job (id, array
index, restart count), the container image digest when the launcher passes it (CONTAINER_IMAGE_DIGEST), and the
command line, overrides, config hash, tags and start time. The environment is recorded without its secrets: a
variable whose name looks secret (KEY, TOKEN, SECRET, PASSWORD, *_PAT, ...) loses its whole value, and every
other value loses the passwords in its URLs and anything shaped like an access token (see `without_secrets`).
The remote's and the submodules' URLs are recorded without credentials (`public_url`): whoever runs the commit
again clones with their own (job.sh takes them from the clone it starts in).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import sys
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from . import git
from .deps import pins
from .files import appending, file_sha256, utc_now, write_atomic, write_json
from .run_files import RunFiles

REDACTED = "<redacted>"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|(^|_)PAT(_|$)", re.IGNORECASE)
# A URL with a password (`user:` then the password, before `@host`) keeps its user and loses the password; a URL
# with a user alone loses a user that is a token (20 or more letters, digits, _ or - in a row) and keeps a user
# name such as `git`.
URL_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^\s/?#@:]*)(?P<password>:[^\s/?#]*)?@", re.I)
TOKEN_AS_USER = re.compile(r"[\w-]{20,}")
# Access tokens by their documented prefixes, at their real lengths, so that `sk-learn` or `hf_cache` stay.
TOKEN = re.compile(
    r"""(?<![A-Za-z0-9])(?:
          gh[opusr]_[A-Za-z0-9]{36,} | github_pat_\w{22,}                    # GitHub
        | glpat-[\w-]{20,}                                                 # GitLab
        | hf_[A-Za-z0-9]{30,}                                              # Hugging Face
        | sk-(?:[A-Za-z0-9]{32,} | (?:proj|ant|svcacct|admin)-[\w-]{20,})  # OpenAI, Anthropic
        | (?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])                         # AWS access key id
        | xox[abprs]-[A-Za-z0-9-]{10,}                                     # Slack
        | AIza[\w-]{35}                                                    # Google API key
        | eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]+                             # JSON Web Token
    )""",
    re.VERBOSE,
)


def collect(root: Path, cfg: DictConfig, config_sha256: str) -> dict[str, Any]:
    """Everything known about this run at its start, for the checkout at `root`."""
    import torch  # already imported by training; here only for its versions

    hydra = HydraConfig.get()
    run = {
        "name": cfg.run_name,
        "experiment": hydra.runtime.choices.get("experiment"),
        "main_tag": cfg.main_tag,
        "tags": list(cfg.tags),
        "overrides": list(hydra.overrides.task),
        "config_sha256": config_sha256,
    }
    return {
        "run": run,
        "git": git_state(root),
        "submodules": [
            {
                "path": p.path,
                "url": public_url(p.url),
                "pinned": p.pinned,
                "checked_out": p.checked_out,
                "dirty": p.dirty,
            }
            for p in pins(root)
        ],
        "library": library_state(),
        "uv_lock_sha256": file_sha256(root / "uv.lock"),
        "software": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cuda_available": torch.cuda.is_available(),
            "num_threads": cfg.trainer.num_threads,
        },
        "machine": {"hostname": socket.gethostname(), "platform": platform.platform()},
        "slurm": slurm_job(),
        "container_image_digest": os.environ.get("CONTAINER_IMAGE_DIGEST"),
        "command": [sys.executable, *sys.argv],
        "started_at": utc_now(),
        "environment": redacted(os.environ),
    }


def library_state() -> dict[str, Any]:
    """samebits' own version, and the commit and local changes of the checkout it is imported from (the project's
    submodule external/samebits, or a development clone); commit and dirty are None for an installed release."""
    from .. import __version__

    checkout = Path(__file__).resolve().parents[3]  # <checkout>/src/samebits/core/provenance.py
    state: dict[str, Any] = {"name": "samebits", "version": __version__, "commit": None, "dirty": None}
    commit = git.output(checkout, "rev-parse", "HEAD") if (checkout / "src" / "samebits").is_dir() else ""
    if commit:  # none in an image (no git there) or for an installed release
        changes = git.output(checkout, "status", "--porcelain", "--untracked-files=no", "--", "src")
        state |= {"commit": commit, "dirty": bool(changes)}
    return state


def write(run_dir: Path, root: Path, found: dict[str, Any]) -> None:
    """The run's first start writes `provenance.json` (and `dirty.patch` when the tree is dirty); a resumed start
    appends what may have changed (host, Slurm restart, time) to `attempts.jsonl`."""
    if not RunFiles(run_dir).provenance.exists():
        if found["git"]["dirty"]:
            write_atomic(RunFiles(run_dir).dirty_patch, lambda out: out.write(git.diff(root)))
        write_json(RunFiles(run_dir).provenance, found)
    else:
        attempt = {key: found[key] for key in ("started_at", "machine", "slurm", "git", "uv_lock_sha256")}
        with appending(RunFiles(run_dir).attempts) as out:
            out.write(json.dumps(attempt) + "\n")


def git_state(root: Path) -> dict[str, Any]:
    """Commit, branch, remote and dirtiness of the checkout at `root` (None values outside a git checkout)."""
    if git.output(root, "rev-parse", "--is-inside-work-tree") != "true":
        return {"commit": None, "branch": None, "remote_url": None, "dirty": None, "diff_sha256": None}
    status = git.changes(root)
    listed = git.output(root, "ls-files", "--others", "--exclude-standard").splitlines() if status else []
    untracked = "\n".join(name for name in listed if not git.is_bytecode(name))
    changes = git.diff(root) + untracked.encode() if status else b""
    return {
        "commit": git.output(root, "rev-parse", "HEAD"),
        "branch": git.output(root, "rev-parse", "--abbrev-ref", "HEAD"),
        "remote_url": public_url(git.output(root, "config", "--get", "remote.origin.url")) or None,
        "dirty": bool(status),
        "diff_sha256": hashlib.sha256(changes).hexdigest() if status else None,
    }


def slurm_job() -> dict[str, str] | None:
    names = {"job_id": "SLURM_JOB_ID", "array_task_id": "SLURM_ARRAY_TASK_ID", "restart_count": "SLURM_RESTART_COUNT"}
    found = {key: os.environ[name] for key, name in names.items() if name in os.environ}
    return found or None


def redacted(environment: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The environment, sorted, with secret-looking names redacted whole and the secrets in other values cut out."""
    return {
        name: REDACTED if SECRET_NAME.search(name) else without_secrets(value)
        for name, value in sorted(environment.items())
    }


def without_secrets(value: str) -> str:
    """`value` with its URLs' passwords and token users, and every token-shaped string, replaced by "<redacted>",
    so that a database URL keeps its user and host: `postgres://u:<redacted>@h/db`."""

    def userinfo(url: re.Match[str]) -> str:
        if url["password"] is not None:
            return f"{url['scheme']}{url['user']}:{REDACTED}@"
        return f"{url['scheme']}{REDACTED}@" if TOKEN_AS_USER.fullmatch(url["user"]) else url[0]

    return TOKEN.sub(REDACTED, URL_USERINFO.sub(userinfo, value))


def public_url(url: str) -> str:
    """A URL as records keep it: without a userinfo that holds a password or a token (`https://u:<password>@h/r` ->
    `https://h/r`); a plain user name (`ssh://git@h/r`) stays, as it is no secret and ssh needs it."""

    def userinfo(found: re.Match[str]) -> str:
        secret = found["password"] is not None or TOKEN_AS_USER.fullmatch(found["user"])
        return found["scheme"] if secret else found[0]

    return URL_USERINFO.sub(userinfo, url)
