"""What a plot's lines are: the runs of one main tag grouped into panels and lines.

Runs that differ only by their seed repeat one experiment: they are one group, drawn as one mean line inside a
band from the lowest to the highest seed. Labels name only the settings that differ within the panel, and past
MAX_SHOWN of them only those that tell the lines apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..project import current
from .records import SEED, display, swept_columns

X_LABEL = "step (optimizer updates)"
# y-axis units by the metric's last name part (`val/loss` -> loss); losses are cross-entropies in nats.
UNITS = {
    "loss": "nats",
    "acc": "fraction correct",
    "accuracy": "fraction correct",
    "bpc": "bits per character",
    "lr": "learning rate",
}
# Past this many differing settings, a label names only those that tell its line apart from the others (the
# legend says how many more differ): twenty `key=value`s per entry would hide the plot, as they did.
MAX_SHOWN = 8


@dataclass
class Group:
    """Runs with the same swept settings but their seeds."""

    settings: dict[str, object]
    names: list[str] = field(default_factory=list)
    seeds: list[object] = field(default_factory=list)
    curves: list[dict[int, float]] = field(default_factory=list)


@dataclass
class Panel:
    """One main tag's runs, on their own axes."""

    main_tag: str
    groups: list[Group]
    colour: str | None  # the setting the colours tell apart; None when nothing but the seed differs
    shown: list[str]  # the settings each label names, `colour` first
    hidden: int  # how many more settings differ, not named in the labels
    note: str | None = None  # `--by`'s one value, when it does not differ among this panel's runs


def unit(metric: str) -> str:
    return UNITS.get(metric.rpartition("/")[2], "value")


def panel(
    main_tag: str, curves: dict[Path, dict[int, float]], settings: dict[Path, dict[str, object]], by: str | None
) -> Panel:
    """The runs of one main tag grouped into lines: coloured by `by` where it differs among them, else by their
    first swept setting but the seed; the seed is averaged over unless it is `by`."""
    found = {run_dir: settings[run_dir] for run_dir in curves}
    swept = swept_columns({str(run_dir): values for run_dir, values in found.items()})
    default = next((key for key in swept if key != SEED), None)
    colour = by if by in swept else default
    note = None
    if by is not None and by not in swept:
        seen = {value_key(values.get(by)): display(values.get(by)) for values in found.values()}
        note = f"{by}={next(iter(seen.values()))} for every run" if len(seen) == 1 else None
    keys = ([colour] if colour else []) + [key for key in swept if key not in (colour, SEED)]
    groups = _groups(curves, found, keys)
    shown = keys if len(keys) <= MAX_SHOWN else _telling_apart(groups, keys)
    return Panel(main_tag, groups, colour, shown, len(keys) - len(shown), note)


def _groups(
    curves: dict[Path, dict[int, float]], settings: dict[Path, dict[str, object]], keys: list[str]
) -> list[Group]:
    """The runs grouped by their values of `keys`."""
    groups: dict[str, Group] = {}
    for run_dir, curve in curves.items():
        shared = {key: settings[run_dir].get(key) for key in keys}
        group = groups.setdefault(value_key(shared), Group(shared))
        group.names.append(run_dir.name)
        group.seeds.append(settings[run_dir].get(SEED))
        group.curves.append(curve)
    return list(groups.values())


def _telling_apart(groups: list[Group], keys: list[str]) -> list[str]:
    """The first of `keys` (always kept: it is the colour), then each further key that tells more groups apart,
    until every group has its own values."""
    chosen: list[str] = keys[:1]
    for key in keys[1:]:
        if _distinct(groups, chosen) == len(groups):
            break
        if _distinct(groups, [*chosen, key]) > _distinct(groups, chosen):
            chosen.append(key)
    return chosen


def _distinct(groups: list[Group], keys: list[str]) -> int:
    return len({value_key([group.settings.get(key) for key in keys]) for group in groups})


def hidden_note(count: int, main_tag: str) -> str:
    """Where to read the settings a panel's labels leave out (on its own line: a command is not broken)."""
    differ = "settings differ" if count > 1 else "setting differs"
    return f"{count} more {differ}, listed by\n{current().package} collect --tag {main_tag}"


def order(value: object) -> tuple[int, object]:
    """Numbers in numeric order, then everything else as text."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return (0, value) if is_number else (1, str(value))


def value_key(value: object) -> str:
    """A value as text that tells unequal values apart (lists and None included)."""
    return json.dumps(value, sort_keys=True, default=str)
