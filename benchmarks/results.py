"""What each benchmark hands back, and how BENCHMARKS.md shows it.

A benchmark returns Sections: a title, what was measured, a table of formatted figures, and its goals, each with
the measured figure and whether it was met. report.py writes them out; nothing here measures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from timing import Stats


@dataclass
class Goal:
    text: str  # e.g. "ours / bare >= 0.97 (steady state)"
    figure: str  # the measured value, e.g. "0.95"
    met: bool


@dataclass
class Section:
    title: str
    method: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, found: dict) -> Section:
        return cls(**{**found, "goals": [Goal(**goal) for goal in found["goals"]]})


def spread(stats: Stats, scale: float = 1.0, digits: int = 3) -> str:
    """`median (min-max)`, e.g. `1.51 (1.48-1.60)`."""
    return f"{stats.median * scale:.{digits}g} ({stats.low * scale:.{digits}g}–{stats.high * scale:.{digits}g})"


def ratio(values: Sequence[float], baselines: Sequence[float]) -> Stats:
    """Round-by-round ratios of two contenders measured in the same rounds."""
    return Stats.of([value / baseline for value, baseline in zip(values, baselines, strict=True)])
