"""Notes on main tags: one line each in configs/tags.yaml, kept in git, saying what a group of runs compares.

A main tag names a group of comparable runs (and their folder); months later, its note is what says why they were
run. `<package> tags` lists every main tag with its runs per state and its note; launchers warn about a main tag
that has no note (`missing_note`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from ..core.errors import UsageError
from ..core.runs import main_tags, run_dirs
from ..core.states import RUN_STATES
from ..launch.observe import observe_all

TAGS_FILE = Path("configs") / "tags.yaml"
NO_NOTE = f"(no note: add one to {TAGS_FILE})"


def notes(project_root: Path) -> dict[str, str]:
    """{main_tag: note} from configs/tags.yaml ({} without the file); a malformed file is a one-line error."""
    path = project_root / TAGS_FILE
    try:
        found = yaml.safe_load(path.read_text()) if path.exists() else None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        raise UsageError(f"{path}{at} is not valid YAML: write one `main_tag: note` per line") from None
    if found is None:
        return {}
    if not isinstance(found, dict) or not all(isinstance(key, str) and _is_note(note) for key, note in found.items()):
        raise UsageError(
            f"{path} must map each main tag to a one-line note, e.g. `dev: quick checks of the default experiment`"
        )
    return {key: str(note).strip() for key, note in found.items() if note is not None}  # `tag:` alone: no note yet


def missing_note(project_root: Path, main_tag: str) -> str | None:
    """A one-line warning when `main_tag` has no note yet, else None."""
    if notes(project_root).get(main_tag):
        return None
    return f"main_tag {main_tag!r} has no note: add `{main_tag}: <what these runs compare>` to {TAGS_FILE} (in git)"


def report(runs_dir: Path, project_root: Path) -> list[str]:
    """One line per main tag, with a run folder or a note: its runs by state, then its note."""
    noted = notes(project_root)
    rows = [(tag, _counts(runs_dir, tag), noted.get(tag) or NO_NOTE) for tag in sorted({*main_tags(runs_dir), *noted})]
    if not rows:
        return [f"no main tags yet: no runs in {runs_dir} and no notes in {project_root / TAGS_FILE}"]
    widths = [max(len(row[column]) for row in rows) for column in (0, 1)]
    return [f"{tag.ljust(widths[0])}  {counts.ljust(widths[1])}  {note}" for tag, counts, note in rows]


def _counts(runs_dir: Path, tag: str) -> str:
    """The runs of one main tag counted by state, in status's order: "8 runs: 6 finished, 2 failed"."""
    found = run_dirs(runs_dir, tag) if (runs_dir / tag).is_dir() else []
    states = Counter(seen.state for seen in observe_all(found))
    ordered = sorted(states, key=lambda state: RUN_STATES.index(state) if state in RUN_STATES else len(RUN_STATES))
    total = f"{len(found)} run{'s' * (len(found) != 1)}"
    return f"{total}: {', '.join(f'{states[state]} {state}' for state in ordered)}" if found else "no runs"


def _is_note(note: object) -> bool:
    return note is None or (isinstance(note, str | int | float) and "\n" not in str(note).strip())
