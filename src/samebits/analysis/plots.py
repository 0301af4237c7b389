"""`<package> plot METRIC`: a metric against the step, one line per run, coloured by one swept setting.

A main tag names a group of comparable runs, so each main tag gets its own panel, with its own axes: runs of
different experiments (the digits MLP and the character model, say) have different step budgets and losses of
different scale, and on one axis the smaller would be a flat line. Within a panel, runs that differ only by their
seed repeat one experiment: they are drawn as one mean line inside a shaded band from the lowest to the highest
seed, so that the spread on the plot is the spread the seeds cause. A second swept setting is told apart by line
style. Labels name only the settings that differ within the panel. `panels` groups the lines; `plot_layout` draws.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..core.runs import run_dirs as find_runs
from . import folders
from .panels import panel
from .plot_layout import draw
from .records import swept_columns

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = ("png", "pdf", "svg")
MAX_PANELS = 6  # past this many main tags, stacked panels no longer read: ask for one


def default_out(runs_dir: Path, metric: str, main_tag: str | None) -> Path:
    return runs_dir / f"{main_tag or 'all'}-{metric.replace('/', '_')}.png"


def plot(runs_dir: Path, metric: str, main_tag: str | None, by: str | None, out: Path | None) -> Figure:
    """Draw `metric` of the runs under `runs_dir` (or of one main tag), one panel per main tag, coloured by the
    setting `by` (default: the first swept setting but the seed), and save it to `out` unless that is None."""
    if out is not None and out.suffix.lstrip(".") not in FORMATS:
        raise UsageError(
            f"--out {out}: a plot is written as {', '.join('.' + f for f in FORMATS)}, not {out.suffix or '-'}"
        )
    run_dirs = find_runs(runs_dir, main_tag)
    if not run_dirs:
        raise UsageError(f"no runs in {runs_dir / (main_tag or '')}: nothing to plot")
    all_lines = {run_dir: folders.lines(run_dir) for run_dir in run_dirs}
    curves = {run_dir: folders.curve(lines, metric) for run_dir, lines in all_lines.items()}
    curves = {run_dir: curve for run_dir, curve in curves.items() if curve}
    if not curves:
        logged = sorted({key for lines in all_lines.values() for line in lines for key in line} - {"step"})
        where = f"of main_tag {main_tag!r}" if main_tag else f"in {runs_dir}"
        raise UsageError(
            f"no run {where} logged {metric!r}: pick one of {', '.join(logged) or '(no metrics logged yet)'}"
        )
    by_tag: dict[str, dict[Path, dict[int, float]]] = {}
    for run_dir, curve in curves.items():
        by_tag.setdefault(run_dir.parent.name, {})[run_dir] = curve
    if len(by_tag) > MAX_PANELS:
        raise UsageError(
            f"{len(by_tag)} main tags logged {metric!r}, too many panels to read on one figure: "
            f"plot one with --tag (one of {', '.join(sorted(by_tag))})"
        )
    settings = {run_dir: folders.settings(run_dir) for run_dir in curves}
    _check_by(by, settings.values())
    panels = [panel(tag, by_tag[tag], settings, by) for tag in sorted(by_tag)]
    return draw(panels, metric, out)


def _check_by(by: str | None, settings: Iterable[dict[str, object]]) -> None:
    settings = list(settings)
    if by is not None and by not in {key for found in settings for key in found}:
        swept = swept_columns(dict(enumerate(settings)))
        choices = ", ".join(swept) if swept else "(the runs differ in no setting)"
        raise UsageError(f"--by {by}: no run has this setting; the settings that differ among these runs: {choices}")
