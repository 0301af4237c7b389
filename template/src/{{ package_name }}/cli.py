"""The project's console command (named after the package). Training itself is `python -m <package>.train`."""

from __future__ import annotations

import argparse
from importlib.metadata import version
from pathlib import Path

PACKAGE = __package__ or __name__.rpartition(".")[0]

DESCRIPTION = f"""\
Experiments run from one config-driven training loop.

train:            python -m {PACKAGE}.train [overrides]   e.g. optim.lr=1e-3 experiment=wide_mlp
see the config:   python -m {PACKAGE}.train --cfg job
prove the bits:   nox -s reproducibility
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PACKAGE, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version(PACKAGE)}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    again = commands.add_parser(
        "reproduce",
        help="run a past run again from its commit, lock and config, and compare the bits",
        description="Run a past run again from its recorded commit (fresh checkout, submodules, uv.lock) and "
        "config, and compare params_sha256 and every logged line with the original.",
    )
    again.add_argument("run_dir", type=Path, help="the run's folder, runs/<main_tag>/<run_name>")
    again.add_argument("--steps", type=int, default=None, help="re-run and compare only the first N steps")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        if args.steps is not None and args.steps < 1:
            parser.error(f"--steps must be at least 1, not {args.steps}")
        from .reproduce import reproduce  # loads Hydra only for this command

        reproduce(args.run_dir, args.steps)
    else:
        parser.print_help()
