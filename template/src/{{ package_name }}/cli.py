"""The project's console command (named after the package). Training itself is `python -m <package>.train`."""

from __future__ import annotations

import argparse
from importlib.metadata import version

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
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help()
