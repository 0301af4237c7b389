"""Sweeps: every point of a `-m` sweep is composed and checked before the first one trains.

Hydra's multirun starts the points one after another, so a mistake in the fifth point (`optim.lr=2e-3,-1`)
would surface only after four runs had trained. `check_sweep` expands the sweep as Hydra's basic sweeper does,
composes each point, and stops with one line per mistake, naming the point, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import get_args_parser
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig

from .checks import problems
from .errors import UsageError


def points(overrides: list[str]) -> list[list[str]]:
    """The override list of each point of a sweep, in the order Hydra runs them."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    return [point for batch in BasicSweeper.split_arguments(parsed, None) for point in batch]


def check_sweep(argv: list[str], composed: Callable[[list[str]], DictConfig]) -> None:
    """With -m/--multirun in `argv`, check each point of the sweep; without it, do nothing."""
    args, _ = get_args_parser().parse_known_args(argv)
    if not args.multirun or args.cfg or args.info:
        return
    found: dict[str, list[int]] = {}  # a mistake shared by many points is reported once
    every = points(args.overrides)
    for number, point in enumerate(every, start=1):
        for line in problems(composed(point)):
            found.setdefault(line, []).append(number)
    fail_points(found, len(every))


def fail_points(found: dict[str, list[int]], total: int) -> None:
    """Stop with one line per mistake, naming the sweep points (numbered from 1) that have it."""
    if found:
        raise UsageError(
            *(f"sweep point{'s' * (len(at) > 1)} {_numbers(at)} of {total}: {line}" for line, at in found.items())
        )


def _numbers(numbers: list[int]) -> str:
    shown = ", ".join(map(str, numbers[:5]))
    return f"{shown}, ... ({len(numbers)} points)" if len(numbers) > 5 else shown
