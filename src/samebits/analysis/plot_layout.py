"""The drawing of `plots`: one panel per main tag, stacked, each with its legend to the right of its axes.

The legend never sits on the data, whatever it holds: it is placed outside the axes, and the figure is grown to
hold it (wider for long entries, a taller panel for many), instead of the axes shrinking to make room, which with
long entries left them no room at all.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .panels import X_LABEL, Group, Panel, hidden_note, order, unit, value_key
from .records import SEED, display

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

AXES_WIDTH = 7.0  # inches, the data area and its tick labels
PANEL_HEIGHT = 4.0  # inches, at least: a panel grows with its legend
MARGIN = 0.6  # inches beside the axes and the legend: the y label, the gap to the legend
LINE_WIDTH = 44  # characters per legend line; longer entries wrap
DPI = 150  # of a PNG
LEGEND_ROWS = 20  # past this many entries, the legend takes two columns
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = (None, "o", "s", "^", "v", "D")  # with the line styles: four times as many lines told apart


def draw(panels: list[Panel], metric: str, out: Path | None) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(AXES_WIDTH + 2 * MARGIN, PANEL_HEIGHT * len(panels)), layout="constrained")
    FigureCanvasAgg(figure)  # files only: no display is needed, and none may exist
    every_axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    legends = [_draw_panel(axes, panel, metric) for axes, panel in zip(every_axes, panels, strict=True)]
    _fit(figure, legends)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out, dpi=DPI)
    return figure


def _fit(figure: Figure, legends: list[Legend]) -> None:
    """Size the figure so that every panel keeps its data area and its legend fits beside it."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    extents = [legend.get_window_extent(renderer) for legend in legends]
    legend_width = max(extent.width for extent in extents) / figure.dpi
    heights = [max(PANEL_HEIGHT, extent.height / figure.dpi + 1.2) for extent in extents]
    figure.set_size_inches(AXES_WIDTH + legend_width + 2 * MARGIN, sum(heights))
    figure.axes[0].get_gridspec().set_height_ratios(heights)  # type: ignore[union-attr]


def _draw_panel(axes: Axes, panel: Panel, metric: str) -> Legend:
    groups = panel.groups
    colour = panel.colour
    others = [name for name in panel.shown if name != colour]
    colours = _colours([group.settings.get(colour) for group in groups] if colour else [None])
    styles = _styles([_values(group, others) for group in groups])
    seeds_vary = len({value_key(seed) for group in groups for seed in group.seeds}) > 1
    for group in sorted(groups, key=lambda group: [order(group.settings.get(name)) for name in panel.shown]):
        linestyle, marker = styles[value_key(_values(group, others))]
        steps = sorted({step for curve in group.curves for step in curve})
        line = {
            "color": colours[value_key(group.settings.get(colour) if colour else None)],
            "linestyle": linestyle,
            "marker": "o" if len(steps) == 1 else marker,  # a single logged step draws no line
            "markersize": 4,
        }
        at_step = [[curve[step] for curve in group.curves if step in curve] for step in steps]
        label = _label(group, panel.shown, seeds_vary)
        if len(group.curves) == 1:
            axes.plot(steps, [values[0] for values in at_step], label=label, **line)
            continue
        mean = [sum(values) / len(values) for values in at_step]
        seeds = f"(mean, min–max over {len(group.curves)} seeds)"
        axes.plot(steps, mean, label=f"{label}\n{seeds}" if label else seeds, **line)
        lowest, highest = [min(values) for values in at_step], [max(values) for values in at_step]
        axes.fill_between(steps, lowest, highest, color=line["color"], alpha=0.2, linewidth=0)
    axes.set_xlabel(X_LABEL)
    axes.set_ylabel(f"{metric} ({unit(metric)})")
    axes.set_title(f"{metric} of main tag {panel.main_tag}")
    axes.grid(alpha=0.3)
    return axes.legend(
        title=_legend_title(panel, others),
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),  # outside the axes, to their right: never on the data
        borderaxespad=0,
        fontsize="small",
        title_fontsize="small",
        alignment="left",
        ncols=1 if len(groups) <= LEGEND_ROWS else 2,
    )


def _legend_title(panel: Panel, others: list[str]) -> str:
    if panel.colour and others:
        lines = [f"colour: {panel.colour}", wrap([f"line style: {others[0]}", *others[1:]])]
    elif panel.colour:
        lines = [panel.colour]
    else:
        lines = ["seeds" if len(panel.groups[0].curves) > 1 else "run"]
    if panel.note:
        lines.append(wrap([panel.note]))
    if panel.hidden:
        lines.append(hidden_note(panel.hidden, panel.main_tag))
    return "\n".join(lines)


def _label(group: Group, names: list[str], seeds_vary: bool) -> str:
    """The group's values of the settings that differ; the run's name when nothing does."""
    shown = [f"{name}={_shown(name, group.settings.get(name))}" for name in names]
    if len(group.curves) == 1 and seeds_vary and SEED not in names:
        shown.append(f"{SEED}={group.seeds[0]}")  # a group of one seed among runs of several: say which
    if not shown and len(group.curves) == 1:
        return wrap([group.names[0]])
    return wrap(shown)


def _shown(name: str, value: object) -> object:
    """A class path by its class name alone: the module path adds length, not meaning."""
    if name.endswith("_target_") and isinstance(value, str):
        return value.rpartition(".")[2]
    return display(value)


def wrap(parts: list[str], width: int = LINE_WIDTH) -> str:
    """`parts` joined by ", " in lines of at most `width` characters where they can be: a line breaks between
    parts, and a part longer than a line after `_`, `.` or `/` (run names and class paths have no spaces)."""
    pieces = []
    for index, part in enumerate(parts):
        part += ", " if index < len(parts) - 1 else ""
        pieces += [part] if len(part) <= width else re.split(r"(?<=[_./])", part)
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.rstrip() for line in lines)


def _values(group: Group, names: list[str]) -> tuple[object, ...]:
    return tuple(display(group.settings.get(name)) for name in names)


def _colours(values: list[object]) -> dict[str, tuple[float, ...]]:
    """One colour per distinct value, in the values' order: tab10's distinct hues, or viridis past ten values."""
    import matplotlib

    distinct = list({value_key(value): value for value in sorted(values, key=order)})
    if len(distinct) <= 10:
        return {found: matplotlib.colormaps["tab10"](index) for index, found in enumerate(distinct)}
    return {found: matplotlib.colormaps["viridis"](index / (len(distinct) - 1)) for index, found in enumerate(distinct)}


def _styles(values: list[tuple[object, ...]]) -> dict[str, tuple[str, str | None]]:
    """A line style (then a marker, past four) per distinct tuple of the other settings."""
    distinct = list({value_key(value): value for value in values})
    return {
        found: (LINE_STYLES[index % len(LINE_STYLES)], MARKERS[index // len(LINE_STYLES) % len(MARKERS)])
        for index, found in enumerate(distinct)
    }
