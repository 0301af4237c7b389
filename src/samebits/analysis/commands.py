"""The analysis subcommands of the console command: `collect`, `plot` and `tags`.

Cheap to import: pandas and matplotlib load only when a command that needs them runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..core.runs import runs_root
from ..project import current

if TYPE_CHECKING:
    import pandas as pd


def add_parsers(commands: argparse._SubParsersAction) -> None:
    collect = commands.add_parser(
        "collect",
        help="one table row per run: settings that differ, final metrics, commit; print it or write CSV/parquet",
        description="One row per run folder under RUNS_DIR (default: runs/): run_name, main_tag, tags, state, "
        "commit and config_sha256, then one column per setting whose value differs among the runs (the seed "
        "too), the step, and the final value of every metric (a finished run's final evaluation). Printed, or "
        "written to --out for pandas or a spreadsheet.",
    )
    collect.add_argument("--tag", help="only the runs of this main_tag (a folder under the runs folder)")
    collect.add_argument(
        "--from",
        dest="source",
        choices=("folders", "mlflow", "wandb"),
        default="folders",
        help="read the runs from their folders (default), or from a tracker alone (folders gone): the MLflow "
        "store, or wandb (its server, or its run files with --wandb-dir)",
    )
    collect.add_argument(
        "--mlflow-uri", metavar="URI", help="the MLflow tracking URI (default: sqlite:///<runs>/mlflow.db)"
    )
    collect.add_argument(
        "--wandb-project",
        metavar="[ENTITY/]PROJECT",
        default=current().package,
        help=f"the W&B project to read (default: {current().package}, logger.wandb.project's default, in your "
        "default entity)",
    )
    collect.add_argument(
        "--wandb-dir",
        type=Path,
        metavar="DIR",
        help="read wandb's run files under DIR (a copy of the runs' wandb/ folders) instead of the W&B server",
    )
    collect.add_argument("--out", type=Path, metavar="FILE", help="write FILE.csv or FILE.parquet instead of printing")
    plot = commands.add_parser(
        "plot",
        help="a metric against the step, one line per run, coloured by a swept setting; seeds averaged",
        description="Draw METRIC from each run's metrics.jsonl against the step, one panel per main tag, coloured "
        "by one setting. Runs that differ only by their seed become one mean line inside a band from the lowest to "
        "the highest seed; labels name the settings that differ within the panel. Prints the path of the file written.",
    )
    plot.add_argument("metric", metavar="METRIC", help="a logged metric, e.g. val/loss, val/acc, train/loss, lr")
    plot.add_argument("--tag", help="only the runs of this main_tag (default: every main tag, each in its own panel)")
    plot.add_argument(
        "--by", metavar="SETTING", help="colour by this dotted setting, e.g. optim.lr (default: the first swept one)"
    )
    plot.add_argument(
        "--out", type=Path, metavar="FILE", help="where to write (default: <runs>/<tag or all>-<metric>.png)"
    )
    commands.add_parser(
        "tags",
        help="every main tag with its runs per state and its note from configs/tags.yaml",
        description="One line per main tag, from the run folders and configs/tags.yaml: its runs counted by "
        "state, and its note. A main tag without a note is pointed out: say in configs/tags.yaml, kept in git, "
        "what its runs compare.",
    )


def run(args: argparse.Namespace, project_root: Path) -> bool:
    """Run an analysis command; False when `args.command` is not one."""
    if args.command == "collect":
        from . import table

        if args.out is not None:
            table.check_out(args.out)  # before reading any run
        found = _table(args, project_root)
        if args.out is None:
            print(table.text(found))
        else:
            table.write(found, args.out)
            print(f"wrote {len(found)} runs to {args.out}")
    elif args.command == "plot":
        from .plots import default_out, plot

        root = runs_root(project_root)
        out = args.out or default_out(root, args.metric, args.tag)
        plot(root, args.metric, args.tag, args.by, out)
        print(out)
    elif args.command == "tags":
        from .tags import report

        print("\n".join(report(runs_root(project_root), project_root)))
    else:
        return False
    return True


def _table(args: argparse.Namespace, project_root: Path) -> pd.DataFrame:
    """The table of the selected runs. Each source turns its runs into `records.RunRecord`s and hands them to
    `table.frame`, which builds the same columns whatever they came from."""
    from .table import collect, frame

    root = runs_root(project_root)
    if args.source == "mlflow":
        from . import from_mlflow

        found = from_mlflow.records(args.mlflow_uri or f"sqlite:///{root / 'mlflow.db'}", args.tag)
    elif args.source == "wandb":
        from . import from_wandb

        if args.wandb_dir is not None:
            found = from_wandb.from_files(args.wandb_dir, args.tag)
        else:
            found = from_wandb.from_server(args.wandb_project, args.tag)
    else:
        return collect(root, args.tag)
    if not found:
        which = f" with main_tag {args.tag}" if args.tag else ""
        raise UsageError(f"no {args.source} runs{which}: train with logger=[jsonl,{args.source}]")
    return frame(found)
