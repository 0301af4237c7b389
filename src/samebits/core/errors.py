"""How a process of the library ends: typed errors, raised where a problem is found and turned into one line
on stderr and an exit code at the entry points only (`exit_on_error`); tracebacks are kept for bugs.

The exit codes of `python -m <package>.train`, which launchers and job scripts act on:

    0    finished (or finished already)
    1    failed: the loss became non-finite (status.json says at which step); a bug also exits 1, with a traceback
    2    a mistake in the config, an override or a path: nothing was trained or written
    73   the run folder is locked by another process (its host and pid are printed): this run is already running
    74   the disk is full or not writable: the last checkpoint is kept; free space and start again
    75   stopped by a signal or trainer.stop_at_step, checkpoint saved: start again to resume (requeue me)
    130  interrupted by Ctrl-C (checkpoint saved at the step boundary; a second Ctrl-C stops at once)
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import yaml

FAILED = 1
USAGE_ERROR = 2
RUN_LOCKED = 73  # EX_CANTCREAT in sysexits.h
STORAGE_ERROR = 74  # EX_IOERR
REQUEUE = 75  # EX_TEMPFAIL: a temporary failure, try again
INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C

# What `git merge-file` writes where both sides changed the same lines, as `copier update` does.
CONFLICT_MARKERS = re.compile(r"^(<<<<<<<|=======|>>>>>>>)( |$)", re.MULTILINE)


class Exit(Exception):
    """How the process ends, decided where it is found out: library code raises it, and the entry points alone
    (`exit_on_error`) print its lines, `PREFIX: line` each on stderr, and exit with its code, without a traceback.
    An `Exit` without lines ends quietly (another process, rank 0 of a torchrun job, says why)."""

    exit_code = FAILED
    prefix = "error"
    at_once = False  # skip the interpreter's exit handlers: a library's handler would wait on a host that is down

    def __init__(self, *lines: str, exit_code: int | None = None) -> None:
        super().__init__(*lines)
        self.lines = lines
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return "; ".join(self.lines)

    def exit(self) -> NoReturn:
        for line in self.lines:
            print(f"{self.prefix}: {line}", file=sys.stderr, flush=True)
        if self.at_once:
            os._exit(self.exit_code)
        raise SystemExit(self.exit_code)


class UsageError(Exit):
    """A mistake in a config, an override, an argument or a path: nothing was trained or written."""

    exit_code = USAGE_ERROR


class ServiceUnreachable(UsageError):
    """A tracker's server does not answer: its client's exit handlers would retry it for minutes."""

    at_once = True


class RunFailed(Exit):
    """The run could not go on (its loss became non-finite); status.json says at which step."""

    exit_code = FAILED


class NotIdentical(Exit):
    """A proof or a reproduction found other bits; the table it printed says where."""

    exit_code = FAILED


class RunLocked(Exit):
    """Another process holds the run folder: that run is training now."""

    exit_code = RUN_LOCKED


class StorageError(Exit):
    """The disk is full or not writable; the last checkpoint is kept."""

    exit_code = STORAGE_ERROR


class Interrupted(Exit):
    """Ctrl-C: what was saved is kept."""

    exit_code = INTERRUPTED
    prefix = "interrupted"


class Stopped(Exit):
    """The attempt stopped at a step boundary after its checkpoint (a signal or trainer.stop_at_step); its code says
    whether to requeue. Not a mistake: the log says why."""

    exit_code = REQUEUE


@contextmanager
def exit_on_error() -> Iterator[None]:
    """The one place where an `Exit` becomes its lines on stderr and the process's exit code."""
    try:
        yield
    except Exit as error:
        error.exit()


@contextmanager
def one_line_config_errors(hint: str) -> Iterator[None]:
    """Turn Hydra's composition errors into one line plus `hint`; let every other exception through whole.

    Hydra prints its own report and exits unless HYDRA_FULL_ERROR is set; setting it lets the error reach us.
    If the user set HYDRA_FULL_ERROR, they asked for Hydra's full trace, and get it.
    """
    # Hydra raises these while it composes the config from files and overrides, before our code runs: they mean a
    # bad override or config file, not a bug. Imported here: commands that compose nothing (`status`) skip Hydra.
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException

    if os.environ.get("HYDRA_FULL_ERROR"):
        yield
        return
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    except (ConfigCompositionException, MissingConfigException, OverrideParseException) as error:
        raise UsageError(f"{_condense(error)} ({_advice(error) or hint})") from None
    except yaml.MarkedYAMLError as error:  # Hydra lets PyYAML's error about a config file through as it is
        if (path := _yaml_file(error)) is None:
            raise
        raise UsageError(yaml_problem(path, error, advice="fix the file's YAML there")) from None
    finally:
        os.environ.pop("HYDRA_FULL_ERROR", None)  # child processes get Hydra's usual reporting


def _advice(error: BaseException) -> str | None:
    """What to do about a composition error whose cause Hydra's own message does not name."""
    # An experiment file without the header merges under an `experiment` key instead of the root.
    if found := re.search(r"In '(experiment/[^']+)'.*Key 'experiment' not in", str(error), re.DOTALL):
        return f"configs/{found.group(1)}.yaml must start with the line `# @package _global_`"
    return None


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


def yaml_problem(path: Path, error: yaml.YAMLError, advice: str) -> str:
    """What is wrong with the YAML file `path` and `advice`, on one line that names the line; conflict markers that
    an update left are named as such, with what to do about them."""
    shown = os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd()) else str(path)
    try:
        text = path.read_text(errors="replace")
    except OSError:
        text = ""
    if found := CONFLICT_MARKERS.search(text):
        line = text.count("\n", 0, found.start()) + 1
        return (
            f"{shown} line {line}: an update left conflict markers (<<<<<<<, =======, >>>>>>>) here: resolve them, "
            "keeping the lines you want and deleting the markers (README: Updating your project, Conflicts)"
        )
    where, what = "", str(error).splitlines()[0]
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        where = f" line {error.problem_mark.line + 1}"
        what = error.problem or what
        if error.context and error.context_mark is not None:
            what += f" ({error.context} at line {error.context_mark.line + 1})"
    return f"{shown}{where}: {what}: {advice}"


def _yaml_file(error: yaml.MarkedYAMLError) -> Path | None:
    """The file PyYAML was reading, when it was reading one (not a string)."""
    mark = error.problem_mark or error.context_mark
    path = Path(mark.name) if mark is not None and mark.name else None
    return path if path is not None and path.is_file() else None
