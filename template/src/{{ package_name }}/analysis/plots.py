"""`<package> plot METRIC`: a metric against the step, one line per run, coloured by one swept setting.

Runs that differ only by their seed repeat one experiment: they are drawn as one mean line inside a shaded band
from the lowest to the highest seed, so that the spread on the plot is the spread the seeds cause. A second swept
setting is told apart by line style.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import fail
from . import folders
from .records import SEED, display, swept_columns

if TYPE_CHECKING:
    from matplotlib.figure import Figure

X_LABEL = "step (optimizer updates)"
# y-axis units by the metric's last name part (`val/loss` -> loss); losses are cross-entropies in nats.
UNITS = {
    "loss": "nats",
    "acc": "fraction correct",
    "accuracy": "fraction correct",
    "bpc": "bits per character",
    "lr": "learning rate",
}
MAIN_TAG = "main_tag"  # plotting several main tags: runs of different tags are never averaged together
LINE_STYLES = ("-", "--", ":", "-.")
FORMATS = ("png", "pdf", "svg")


@dataclass
class Group:
    """Runs with the same swept settings but their seeds."""

    settings: dict[str, object]
    names: list[str] = field(default_factory=list)
    seeds: list[object] = field(default_factory=list)
    curves: list[dict[int, float]] = field(default_factory=list)


def default_out(runs_dir: Path, metric: str, main_tag: str | None) -> Path:
    return runs_dir / f"{main_tag or 'all'}-{metric.replace('/', '_')}.png"


def unit(metric: str) -> str:
    return UNITS.get(metric.rpartition("/")[2], "value")


def plot(runs_dir: Path, metric: str, main_tag: str | None, by: str | None, out: Path | None) -> Figure:
    """Draw `metric` of the runs under `runs_dir` (or of one main tag), coloured by the setting `by` (default: the
    first swept setting but the seed), and save it to `out` unless that is None."""
    if out is not None and out.suffix.lstrip(".") not in FORMATS:
        fail([f"--out {out}: a plot is written as {', '.join('.' + f for f in FORMATS)}, not {out.suffix or '-'}"])
    run_dirs = folders.run_dirs(runs_dir, main_tag)
    if not run_dirs:
        fail([f"no runs in {runs_dir / (main_tag or '')}: nothing to plot"])
    all_lines = {run_dir: folders.lines(run_dir) for run_dir in run_dirs}
    curves = {run_dir: folders.curve(lines, metric) for run_dir, lines in all_lines.items()}
    curves = {run_dir: curve for run_dir, curve in curves.items() if curve}
    if not curves:
        logged = sorted({key for lines in all_lines.values() for line in lines for key in line} - {"step"})
        where = f"of main_tag {main_tag!r}" if main_tag else f"in {runs_dir}"
        fail([f"no run {where} logged {metric!r}: pick one of {', '.join(logged) or '(no metrics logged yet)'}"])
    plotted_tags = sorted({run_dir.parent.name for run_dir in curves})
    several_tags = len(plotted_tags) > 1
    settings = {
        run_dir: folders.settings(run_dir) | ({MAIN_TAG: run_dir.parent.name} if several_tags else {})
        for run_dir in curves
    }
    swept = swept_columns({str(run_dir): found for run_dir, found in settings.items()})
    by = _colour_setting(by, swept, settings.values())
    # The seed is averaged over, unless it is what the lines are coloured by.
    keys = [by] if by else []
    groups = _groups(curves, settings, keys + [key for key in swept if key not in (by, SEED)])
    return _draw(groups, metric, plotted_tags, by, out)


def _colour_setting(by: str | None, swept: list[str], settings: Iterable[dict[str, object]]) -> str | None:
    """`by`, checked; by default the first swept setting but the seed (the main tag, then the seed, as a last
    resort), or None when the runs differ in nothing."""
    if by is None:
        ranked = sorted(swept, key=lambda key: (key == MAIN_TAG) + 2 * (key == SEED))  # stable: config order
        return next(iter(ranked), None)
    if by not in {key for found in settings for key in found}:
        choices = ", ".join(swept) if swept else "(the runs differ in no setting)"
        fail([f"--by {by}: no run has this setting; the settings that differ among these runs: {choices}"])
    return by


def _groups(
    curves: dict[Path, dict[int, float]], settings: dict[Path, dict[str, object]], keys: list[str]
) -> list[Group]:
    """The runs grouped by their values of `keys`."""
    groups: dict[str, Group] = {}
    for run_dir, curve in curves.items():
        shared = {key: settings[run_dir].get(key) for key in keys}
        group = groups.setdefault(_key(shared), Group(shared))
        group.names.append(run_dir.name)
        group.seeds.append(settings[run_dir].get(SEED))
        group.curves.append(curve)
    return list(groups.values())


def _draw(groups: list[Group], metric: str, main_tags: list[str], by: str | None, out: Path | None) -> Figure:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display is needed, and none may exist
    from matplotlib.figure import Figure

    others = [key for key in groups[0].settings if key != by]
    colours = _colours([group.settings.get(by) for group in groups] if by else [None])
    styles = _line_styles([_others(group, others) for group in groups])
    seeds_vary = len({_key(seed) for group in groups for seed in group.seeds}) > 1
    figure = Figure(figsize=(8, 5), layout="constrained")
    axes = figure.subplots()
    for group in sorted(groups, key=lambda group: [_order(group.settings.get(key)) for key in [by, *others] if key]):
        line = {
            "color": colours[_key(group.settings.get(by) if by else None)],
            "linestyle": styles[_key(_others(group, others))],
        }
        steps = sorted({step for curve in group.curves for step in curve})
        at_step = [[curve[step] for curve in group.curves if step in curve] for step in steps]
        label = _label(group, [by, *others] if by else others, seeds_vary)
        if len(steps) == 1:
            line["marker"] = "o"  # a single logged step draws no line
        if len(group.curves) == 1:
            axes.plot(steps, [values[0] for values in at_step], label=label, **line)
            continue
        mean = [sum(values) / len(values) for values in at_step]
        axes.plot(steps, mean, label=f"{label} (mean, min–max over {len(group.curves)} seeds)", **line)
        lowest, highest = [min(values) for values in at_step], [max(values) for values in at_step]
        axes.fill_between(steps, lowest, highest, color=line["color"], alpha=0.2, linewidth=0)
    axes.set_xlabel(X_LABEL)
    axes.set_ylabel(f"{metric} ({unit(metric)})")
    axes.set_title(f"{metric} of main tag{'s' * (len(main_tags) > 1)} {', '.join(main_tags)}")
    legend_title = by if not others else f"colour: {by}; line style: {', '.join(others)}"
    axes.legend(title=legend_title, fontsize="small")
    axes.grid(alpha=0.3)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out, dpi=150)
    return figure


def _label(group: Group, keys: list[str], seeds_vary: bool) -> str:
    shown = [f"{key}={display(group.settings[key])}" for key in keys]
    if len(group.curves) == 1 and seeds_vary and SEED not in keys:
        shown.append(f"{SEED}={group.seeds[0]}")  # a group of one seed among runs of several: say which
    return ", ".join(shown) or group.names[0]


def _others(group: Group, others: list[str]) -> tuple[object, ...]:
    return tuple(display(group.settings[key]) for key in others)


def _colours(values: list[object]) -> dict[str, tuple[float, ...]]:
    """One colour per distinct value, in the values' order: tab10's distinct hues, or viridis past ten values."""
    import matplotlib

    distinct = list({_key(value): value for value in sorted(values, key=_order)})
    if len(distinct) <= 10:
        return {key: matplotlib.colormaps["tab10"](index) for index, key in enumerate(distinct)}
    return {key: matplotlib.colormaps["viridis"](index / (len(distinct) - 1)) for index, key in enumerate(distinct)}


def _line_styles(values: list[tuple[object, ...]]) -> dict[str, str]:
    distinct = list({_key(value): value for value in values})
    return {key: LINE_STYLES[index % len(LINE_STYLES)] for index, key in enumerate(distinct)}


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _order(value: object) -> tuple[int, object]:
    """Numbers in numeric order, then everything else as text."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return (0, value) if is_number else (1, str(value))
