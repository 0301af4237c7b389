"""The project the library serves: its package (research code, schemas) and its checkout (configs/, jobs/, runs/).

A project hands itself over at its entry points (`<package>/train.py`, `<package>/cli.py`) with `use(package)`.
The choice is kept in the environment as well, so that the processes the library starts (the proof's training
runs, a local launcher's job watcher) serve the same project without being told again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path
from types import ModuleType

from .core.errors import UsageError

ENVIRONMENT = "SAMEBITS_PROJECT_PACKAGE"


@dataclass(frozen=True)
class Project:
    package: str  # the project's import name, e.g. my_experiments
    root: Path  # the checkout: pyproject.toml, configs/, jobs/, src/<package>/

    @property
    def config_dir(self) -> Path:
        return self.root / "configs"

    @property
    def job_script(self) -> Path:
        return self.root / "jobs" / "job.sh"

    def schemas(self) -> ModuleType:
        """The research components' typed settings (`<package>.research.schemas`, with a `register(store)`)."""
        return import_module(f"{self.package}.research.schemas")

    def module(self, name: str) -> ModuleType:
        return import_module(f"{self.package}.{name}")


def use(package: str) -> Project:
    """Serve `package` from now on, in this process and in the processes it starts."""
    os.environ[ENVIRONMENT] = package
    current.cache_clear()
    return current()


@cache
def current() -> Project:
    package = os.environ.get(ENVIRONMENT)
    if not package:
        raise UsageError("no project to serve: run this through your project's entry point (python -m <package>.train)")
    module = import_module(package)
    source = Path(module.__file__ or "").resolve()
    # src/<package>/__init__.py: the checkout is two folders above the package
    return Project(package=package, root=source.parents[2])


def user_cache(package: str, env: Mapping[str, str] = os.environ) -> Path:
    """${XDG_CACHE_HOME:-$HOME/.cache}/<package> (an empty variable counts as unset): what the library keeps for a
    project across runs and checkouts (job.sh's checkouts, experiments' composed configs)."""
    base = env.get("XDG_CACHE_HOME") or f"{env.get('HOME') or Path.home()}/.cache"
    return Path(base) / package
