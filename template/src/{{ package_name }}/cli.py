"""The project's console command, `<package> SUBCOMMAND` (`--help` lists them): samebits serves this package."""

from samebits import cli


def main() -> None:
    cli.main(__package__ or __name__.rpartition(".")[0])
