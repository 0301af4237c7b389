"""User mistakes end in one line on stderr and exit code 2; tracebacks are kept for bugs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException

USAGE_ERROR = 2

# Hydra raises these while it composes the config from files and overrides, before our code runs: they
# mean a bad override or config file, not a bug.
COMPOSITION_ERRORS = (ConfigCompositionException, MissingConfigException, OverrideParseException)


def fail(lines: Iterable[str]) -> NoReturn:
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    raise SystemExit(USAGE_ERROR)


@contextmanager
def one_line_config_errors(hint: str) -> Iterator[None]:
    """Turn Hydra's composition errors into one line plus `hint`; let every other exception through whole.

    Hydra prints its own report and exits unless HYDRA_FULL_ERROR is set; setting it lets the error reach us.
    If the user set HYDRA_FULL_ERROR, they asked for Hydra's full trace, and get it.
    """
    if os.environ.get("HYDRA_FULL_ERROR"):
        yield
        return
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    except COMPOSITION_ERRORS as error:
        fail([f"{_condense(error)} ({hint})"])
    finally:
        os.environ.pop("HYDRA_FULL_ERROR", None)  # child processes get Hydra's usual reporting


def _condense(error: BaseException) -> str:
    """Hydra's message and its cause on one line, without the indented details and search-path listing."""
    parts: list[str] = []
    for message in (str(error), str(error.__cause__ or "")):
        for line in message.splitlines():
            if line.startswith("Config search path"):
                break
            detail = line[:1].isspace() and (":" in line or "=" in line)  # full_key: ..., object_type=...
            if line.strip() and not detail and not line.startswith("To append to your config"):
                parts.append(line.strip())
    return " ".join(dict.fromkeys(parts))
