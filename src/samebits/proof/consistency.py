"""Before a run is reproduced: do its records agree with each other and with their hashes?

`reproduce` re-runs a run from what provenance.json says and compares the bits with what summary.json and
metrics.jsonl say. If one of those files was edited or damaged after the run, a reproduction would compare against
a record that no longer describes the run, and "identical" or "different" would both mislead. So every file that
describes the run is checked first, and the first that disagrees is named:

- provenance.json, config.yaml and launch.json name the run of this folder, under this main tag;
- config.yaml hashes to provenance.json's `config_sha256`, which the run's name ends with;
- the overrides provenance.json recorded are the values config.yaml holds;
- every attempt ran the commit provenance.json names, from a clean tree (attempts.jsonl, launch.json);
- summary.json, status.json and metrics.jsonl are whole and agree on the last step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from ..core import run_files
from ..core.config import flatten, identity
from ..core.files import read_json_record
from ..core.hashing import config_sha256
from ..core.run_files import RunFiles

NAME_HASH = re.compile(r"__([0-9a-f]{8})$")


class Disagreement(Exception):
    """A record of the run that contradicts another, or its hash: the message names it."""


def check(run_dir: Path, finished: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's provenance and its metric lines, once every record agrees; else raise `Disagreement`."""
    provenance = _json(RunFiles(run_dir).provenance)
    run, git = provenance.get("run"), provenance.get("git")
    if not isinstance(run, dict) or not isinstance(git, dict):
        raise Disagreement(f"{RunFiles(run_dir).provenance} lacks its run or git section")
    config = _config(RunFiles(run_dir).config)
    _same_run(run_dir, run_files.PROVENANCE, run.get("name"), run.get("main_tag"))
    _same_run(run_dir, run_files.CONFIG, config.get("run_name"), config.get("main_tag"))
    found = config_sha256(identity(OmegaConf.create(config)))
    if found != run.get("config_sha256"):
        raise Disagreement(
            f"{RunFiles(run_dir).config} does not hash to provenance.json's config_sha256 ({found[:12]} against "
            f"{str(run.get('config_sha256'))[:12]}): it was changed after the run started"
            + "".join(f" ({line})" for line in _override_differences(config, run.get("overrides") or [])[:1])
        )
    if (named := NAME_HASH.search(run_dir.name)) and named.group(1) != found[:8]:
        raise Disagreement(f"the run's name ends in {named.group(1)}, but its config.yaml hashes to {found[:8]}")
    if differences := _override_differences(config, run.get("overrides") or []):
        raise Disagreement(f"{RunFiles(run_dir).config} disagrees with provenance.json's overrides: {differences[0]}")
    _one_commit(run_dir, git.get("commit"))
    lines = _metric_lines(RunFiles(run_dir).metrics)
    if finished:
        _finished(run_dir, lines)
    return provenance, lines


def _same_run(run_dir: Path, file: str, name: object, main_tag: object) -> None:
    if name != run_dir.name:
        raise Disagreement(f"{run_dir / file} names run {name!r}, but its folder is {run_dir.name!r}")
    if main_tag != run_dir.parent.name:
        raise Disagreement(
            f"{run_dir / file} names main_tag {main_tag!r}, but the run is under {run_dir.parent.name!r}"
        )


def _override_differences(config: dict[str, Any], overrides: list[str]) -> list[str]:
    """`key: config.yaml has X, the run was started with Y` for each recorded value override config.yaml lacks.
    Group choices (`optim=sgd`) and settings that are not plain values in config.yaml are not compared."""
    flat = flatten(config)
    found = []
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.key_or_group
        if override.is_delete() or override.is_sweep_override() or key not in flat:
            continue
        wanted = OmegaConf.to_container(OmegaConf.create({"v": override.value()}))["v"]  # type: ignore[index]
        if not _equal(flat[key], wanted):
            found.append(f"{key}: config.yaml has {flat[key]!r}, the run was started with {override.input_line}")
    return found


def _equal(saved: object, wanted: object) -> bool:
    if isinstance(saved, float) and isinstance(wanted, int | float) and not isinstance(wanted, bool):
        return saved == float(wanted)
    return saved == wanted


def _one_commit(run_dir: Path, commit: object) -> None:
    try:
        attempts = RunFiles(run_dir).attempts.read_text().splitlines()
    except FileNotFoundError:
        attempts = []
    for number, line in enumerate(attempts, start=2):
        try:
            git = json.loads(line)["git"]
        except (ValueError, KeyError, TypeError):
            raise Disagreement(f"{RunFiles(run_dir).attempts} line {number - 1} is damaged") from None
        if git.get("commit") != commit or git.get("dirty"):
            ran = f"{str(git.get('commit'))[:12]}{' (dirty)' if git.get('dirty') else ''}"
            raise Disagreement(
                f"attempt {number} of the run ran {ran}, not {str(commit)[:12]} (attempts.jsonl): a run trained at "
                "more than one commit cannot be reproduced from one"
            )
    record = RunFiles(run_dir).launch_record
    launched = _json(record) if record.exists() else {}
    if launched and (launched.get("run_name") != run_dir.name or launched.get("commit") != commit):
        raise Disagreement(
            f"{record} launched {launched.get('run_name')!r} at {str(launched.get('commit'))[:12]}, "
            f"but provenance.json says {run_dir.name!r} at {str(commit)[:12]}"
        )


def _finished(run_dir: Path, lines: list[dict[str, Any]]) -> None:
    summary = _json(RunFiles(run_dir).summary)
    if not isinstance(summary.get("params_sha256"), str) or not isinstance(summary.get("step"), int):
        raise Disagreement(f"{RunFiles(run_dir).summary} lacks params_sha256 or step")
    status = _json(RunFiles(run_dir).status)
    if status.get("state") != "finished" or status.get("step") != summary["step"]:
        raise Disagreement(
            f"{RunFiles(run_dir).status} says {status.get('state')} at step {status.get('step')}, but summary.json "
            f"says finished at step {summary['step']}"
        )
    if lines and lines[-1]["step"] > summary["step"]:
        raise Disagreement(f"{RunFiles(run_dir).metrics} goes on to step {lines[-1]['step']}, past summary.json's")


def _metric_lines(path: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            record = json.loads(line)
            step = record["step"]
        except (ValueError, KeyError, TypeError):
            raise Disagreement(f"{path} line {number} is damaged") from None
        if not isinstance(step, int) or (found and step <= found[-1]["step"]):
            raise Disagreement(f"{path} line {number} is out of order (step {step!r})")
        found.append(record)
    return found


def _json(path: Path) -> dict[str, Any]:
    found, damage = read_json_record(path)
    if found is None:
        raise Disagreement(damage or f"{path} is missing")
    return found


def _config(path: Path) -> dict[str, Any]:
    return _mapping(path, yaml.safe_load, "a YAML mapping of settings")


def _mapping(path: Path, parse: Callable[[str], object], what: str) -> dict[str, Any]:
    try:
        found = parse(path.read_text())
    except FileNotFoundError:
        raise Disagreement(f"{path} is missing") from None
    except (OSError, ValueError, yaml.YAMLError):
        found = None
    if not isinstance(found, dict):
        raise Disagreement(f"{path} is damaged (not {what})")
    return found
