"""An experiment's own config, with no overrides: what a run's name is compared with (naming.py), kept across runs.

Composing it again costs every run a third of a second at start, for a config that changes only when the config
files or the schemas do (docs/decisions/0017-experiment-config-kept-across-runs.md). It is kept under a key over
everything that composition reads:
- the text of every config file on Hydra's search path (the project's `configs/` and Hydra's own);
- every registered schema (Hydra's ConfigStore), with the type of each of its values;
- the experiment's name, and the versions of Hydra, OmegaConf and Python.

Any change to one of these is a new key, so a stale entry is never read. What is kept is the config unresolved, as
`config.identity` takes it: its interpolations still resolve in each run, with that run's environment. The entries
live in ${XDG_CACHE_HOME:-~/.cache}/<package>/configs; a folder that cannot be written only costs the composition.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

import hydra
import omegaconf
from hydra.core.config_store import ConfigStore

from .files import read_json_object, write_json

FORMAT = 1  # of an entry; a change to what an entry holds must change it
CONFIG_SUFFIXES = (".yaml", ".yml")

# The experiment's config as a container, unresolved and without its `hydra` node, and its chosen config groups.
OwnConfig = tuple[dict[str, Any], dict[str, Any]]


def own_config(
    experiment: str | None, sources: Iterable[tuple[str, str]], folder: Path, compose: Callable[[], OwnConfig]
) -> OwnConfig:
    """The kept entry for `experiment` over Hydra's search path `sources` ((schema, path) pairs, as in
    `hydra.runtime.config_sources`), else `compose()`, kept for the next run."""
    try:
        found = key(experiment, sources)
    except (OSError, ImportError):  # a config folder that went while listed: compose, as without a key
        found = None
    if found is None:
        return compose()
    path = folder / f"{found}.json"
    entry = read_json_object(path)
    if entry is not None and entry.get("format") == FORMAT and entry.get("experiment") == experiment:
        return entry["config"], entry["choices"]
    config, choices = compose()
    entry = {"format": FORMAT, "experiment": experiment, "config": config, "choices": choices}
    try:
        if json.loads(json.dumps(entry)) == entry:  # an Enum, a NaN or a non-text key would not read back the same
            write_json(path, entry, sync_folder=False)
    except (OSError, TypeError, ValueError):
        pass  # kept or not, this run has its config
    return config, choices


def key(
    experiment: str | None, sources: Iterable[tuple[str, str]], store: Mapping[str, Any] | None = None
) -> str | None:
    """A digest of what composing `experiment` reads; None where a source is of a kind not known here."""
    digest = hashlib.sha256()
    for part in (FORMAT, experiment, hydra.__version__, omegaconf.__version__, sys.version_info[:2]):
        digest.update(f"{part!r}\n".encode())
    for schema, place in sources:
        digest.update(f"source {schema}\n".encode())  # not its path: a project's copy elsewhere composes the same
        if schema == "file":
            _hash_files(digest, Path(place))
        elif schema == "pkg":
            _hash_files(digest, resources.files(place.replace("/", ".")))
        elif schema == "structured":
            for name, node in _stored(ConfigStore.instance().repo if store is None else store):
                # A pickled node keeps each value's node type (IntegerNode, ...), which decides how a file's value
                # merged into it converts.
                digest.update(f"schema {name}\n".encode())
                digest.update(pickle.dumps((node.node, node.group, node.package, node.provider)))
        else:
            return None
    return digest.hexdigest()


def _hash_files(digest: Any, folder: Traversable) -> None:
    for relative, file in sorted(_config_files(folder, "")):
        digest.update(f"file {relative} ".encode())
        digest.update(hashlib.sha256(file.read_bytes()).digest())


def _config_files(folder: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for child in folder.iterdir():
        if child.is_dir():
            yield from _config_files(child, f"{prefix}{child.name}/")
        elif child.name.endswith(CONFIG_SUFFIXES):
            yield f"{prefix}{child.name}", child


def _stored(repo: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name in sorted(repo):
        if isinstance(repo[name], dict):
            yield from _stored(repo[name], f"{prefix}{name}/")
        else:
            yield f"{prefix}{name}", repo[name]
