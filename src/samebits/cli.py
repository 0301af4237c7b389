"""The project's console command (named after its package): `<package> train` is `python -m <package>.train`.

A project's `<package>.cli:main` hands its package to `main` here; every subcommand then serves that project."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .analysis import commands as analysis
from .core.errors import UsageError, exit_on_error
from .launch import backends
from .project import current, use

DESCRIPTION = """\
Experiments run from one config-driven training loop.

train:            {package} train [overrides]   e.g. optim.lr=1e-3 experiment=wide_mlp
                  (the same as: python -m {package}.train [overrides])
another task:     {package} train experiment=char_transformer
see the config:   {package} train --cfg job
evaluate a run:   {package} eval RUN_DIR [--split val|test] [--checkpoint latest|best]   (writes eval.json)
prove the bits:   nox -s reproducibility   (or: {package} proof [--only 1,2] [overrides])
search:           {package} search configs/search/digits.yaml [--parallel N]   (Optuna; run again to carry on)
launch a sweep:   {package} launch [--backend {backends}] [--dry-run] -- optim.lr=1e-3,3e-3 seed=0,1
see the runs:     {package} status [--tag MAIN_TAG]
compare runs:     {package} collect --tag MAIN_TAG [--out runs.csv]   (--from mlflow: from the tracker alone)
plot a metric:    {package} plot val/loss --tag MAIN_TAG [--by optim.lr]
main tags:        {package} tags   (each with its runs per state and its note from configs/tags.yaml)
free disk space:  {package} jobs-cache prune --keep 5   (job.sh's checkouts, each with a .venv)
"""


def build_parser() -> argparse.ArgumentParser:
    package = current().package
    parser = argparse.ArgumentParser(
        prog=package,
        description=DESCRIPTION.format(package=package, backends="|".join(backends.names())),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    versions = f"%(prog)s {_version(package)} (samebits {_version('samebits')})"
    parser.add_argument("--version", action="version", version=versions)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    training = commands.add_parser(
        "train",
        help=f"train one run (or a sweep with -m): the same as python -m {package}.train",
        description=f"Train with the Hydra config tree under configs/, exactly as `python -m {package}.train` does: "
        "every argument goes to Hydra (overrides, -m for a sweep, --cfg job to print the config).",
    )
    training.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. optim.lr=1e-3 trainer.precision=bf16")
    commands.add_parser(
        "proof",
        add_help=False,
        help="prove that this project trains bit for bit repeatably (what nox -s reproducibility runs)",
    )
    again = commands.add_parser(
        "reproduce",
        help="run a past run again from its commit, lock and config, and compare the bits",
        description="Run a past run again from its recorded commit (fresh checkout, submodules, uv.lock) and "
        "config, and compare params_sha256 and every logged line with the original.",
    )
    again.add_argument("run_dir", type=Path, help="the run's folder, runs/<main_tag>/<run_name>")
    again.add_argument("--steps", type=int, default=None, help="re-run and compare only the first N steps")
    again.add_argument(
        "--repo",
        metavar="URL",
        help="clone the run's commit from URL (default: the recorded remote, with this project's credentials for it)",
    )
    evaluation = commands.add_parser(
        "eval",
        help="evaluate a run's latest or best checkpoint on its validation or test split; writes eval.json",
        description="Load a run's checkpoint with the run's saved config (data, model, objective, device, threads, "
        "precision), evaluate it on a split, print the metrics and record them in RUN_DIR/eval.json. The same "
        "checkpoint gives the same numbers every time; a finished run's latest gives its final evaluation's.",
    )
    evaluation.add_argument("run_dir", type=Path, help="the run's folder, runs/<main_tag>/<run_name>")
    evaluation.add_argument("--split", choices=("val", "test"), default="val", help="default: val")
    evaluation.add_argument(
        "--checkpoint",
        choices=("latest", "best"),
        default="latest",
        help="latest, or best by trainer.best_metric (default: latest)",
    )
    text = commands.add_parser(
        "sample",
        help="print text generated from a language-model run's latest checkpoint",
        description="Print the prompt followed by text generated from a language-model run's latest checkpoint. "
        "The same run, prompt and seed give the same text.",
    )
    text.add_argument("run_dir", type=Path, help="the run's folder, runs/<main_tag>/<run_name>")
    text.add_argument("--chars", type=int, default=500, help="how many characters to generate (default: 500)")
    text.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    text.add_argument("--seed", type=int, default=0, help="seed of the draws (default: 0)")
    text.add_argument("--temperature", type=float, default=1.0, help="below 1: safer text; above 1: wilder")
    launch = commands.add_parser(
        "launch",
        help="submit every run of a sweep that is not running, pending or finished; never one run twice",
        description="Expand the overrides (Hydra's sweep syntax) into runs named as training names them, check "
        "each, and plan each: SKIP (queued, pending, running, finished), RELAUNCH (failed, preempted, lost: it "
        "resumes from its latest checkpoint) or NEW. Print the plan, then submit the runs to do, each running "
        "jobs/job.sh at this commit, which must be committed and pushed. Safe to run again and again, and from "
        "several shells at once.",
    )
    launch.add_argument("--backend", choices=backends.names(), default="local", help="where runs go (default: local)")
    launch.add_argument("--dry-run", action="store_true", help="print the plan, submit nothing")
    launch.add_argument(
        "--max-concurrent",
        type=int,
        metavar="N",
        help="at most N runs at once (local default: 1; slurm: the array's %%N, default: no cap)",
    )
    modes = launch.add_mutually_exclusive_group()
    modes.add_argument(
        "--retry-failed", action="store_true", help="relaunch runs that did not finish; submit no new run"
    )
    modes.add_argument(
        "--force", action="store_true", help="start failed and finished runs over (old folders kept, renamed)"
    )
    launch.add_argument("overrides", nargs="*", help="overrides and sweeps, e.g. experiment=wide_mlp seed=0,1,2")
    study = commands.add_parser(
        "search",
        help="an Optuna hyperparameter search, each trial an ordinary run launched as `launch` launches it",
        description="Run an Optuna study over the search space in SPACE (e.g. configs/search/digits.yaml): each "
        "trial's parameters become overrides of a run submitted through `launch`; finished runs' metrics are "
        "told to the study, kept in <runs folder>/<main_tag>/optuna.db. Run the same command again to carry on "
        "after a stop. Needs `uv sync --extra search`.",
    )
    study.add_argument("space", type=Path, help="the search space, e.g. configs/search/digits.yaml")
    study.add_argument("--study", help="the study's name (default: the space file's name)")
    study.add_argument("--backend", choices=backends.names(), default="local", help="where runs go (default: local)")
    study.add_argument("--parallel", type=int, default=1, metavar="N", help="trials running at once (default: 1)")
    study.add_argument("--poll-s", type=float, default=10.0, help="seconds between looks at the runs (default: 10)")
    status = commands.add_parser(
        "status",
        help="one row per run: state, step, last evaluation, last update; then counts per state",
        description="One row per run folder under RUNS_DIR (default: runs/): its state, step of max_steps, last "
        "validation metrics and when its status was last written, then the count of runs per state. A run "
        "that says running but whose process on this machine is gone is shown as lost.",
    )
    status.add_argument("--tag", help="only the runs of this main_tag (a folder under the runs folder)")
    analysis.add_parsers(commands)  # collect, plot, tags (analysis/commands.py)
    cache = commands.add_parser(
        "jobs-cache",
        help="list job.sh's checkouts, or prune the least recently used",
        description="jobs/job.sh keeps one checkout per commit, each with a full .venv, under $JOB_CACHE "
        "(default: ${XDG_CACHE_HOME:-~/.cache}/" + current().package + "/jobs). A checkout a running job uses is never "
        "removed.",
    )
    actions = cache.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="show each checkout: commit, last use, size on disk, state")
    prune = actions.add_parser("prune", help="keep the N most recently used checkouts, remove the others")
    prune.add_argument("--keep", type=int, default=5, help="how many checkouts to keep (default: 5)")
    prune.add_argument("--dry-run", action="store_true", help="print what would be removed, remove nothing")
    return parser


def main(package: str, argv: list[str] | None = None) -> None:
    """The console command of the project whose import name is `package`."""
    use(package)
    with exit_on_error():
        _run(argv)


def _run(argv: list[str] | None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train"]:  # before argparse, which would take Hydra's own options (--cfg, -m) for ours
        train(argv[1:])
        return
    if argv[:1] == ["proof"]:  # the proof parses its own options
        from .proof.reproducibility import main as prove

        prove(argv[1:])
        return
    parser = build_parser()
    args = parser.parse_args(argv)
    if analysis.run(args, current().root):
        return
    if args.command == "reproduce":
        if args.steps is not None and args.steps < 1:
            raise UsageError(f"--steps must be at least 1, not {args.steps}")
        from .proof.reproduce import reproduce  # loads Hydra only for this command

        reproduce(args.run_dir, args.steps, args.repo)
    elif args.command == "eval":
        from .core.evaluation import evaluate_run  # loads torch only for this command

        result = evaluate_run(args.run_dir, args.split, args.checkpoint)
        shown = "  ".join(f"{key}={value:.6g}" for key, value in result["metrics"].items())
        print(f"{args.run_dir.name} {result['checkpoint']} (step {result['step']}), {args.split}: {shown}")
    elif args.command == "sample":
        mistakes = [
            *([f"--chars must be at least 1, not {args.chars}"] if args.chars < 1 else []),
            *(["--prompt must not be empty: give text to continue, e.g. --prompt 'The '"] if not args.prompt else []),
            *([f"--temperature must be > 0, not {args.temperature}"] if args.temperature <= 0 else []),
        ]
        if mistakes:
            raise UsageError(*mistakes)
        sample = current().module("research.sampling").sample  # loads torch only for this command

        print(sample(args.run_dir, args.chars, args.prompt, args.seed, args.temperature))
    elif args.command == "launch":
        if args.max_concurrent is not None and args.max_concurrent < 1:
            raise UsageError(f"--max-concurrent must be at least 1, not {args.max_concurrent}")
        from .launch.command import launch  # loads Hydra only for this command

        launch(args.overrides, args.backend, args.dry_run, args.max_concurrent, args.retry_failed, args.force)
    elif args.command == "search":
        if args.parallel < 1 or args.poll_s <= 0:
            raise UsageError(f"--parallel must be >= 1 and --poll-s > 0, not {args.parallel} and {args.poll_s}")
        try:
            from .launch.search import search
        except ModuleNotFoundError as error:
            if error.name != "optuna":
                raise
            raise UsageError("the search needs Optuna, which is not installed: run `uv sync --extra search`") from None
        search(args.space, args.study, args.backend, args.parallel, args.poll_s)
    elif args.command == "status":
        from .core.runs import runs_root
        from .launch import status

        print("\n".join(status.report(runs_root(current().root), args.tag)))
    elif args.command == "jobs-cache":
        if args.action == "prune" and args.keep < 0:
            raise UsageError(f"--keep must be 0 or more, not {args.keep}")
        from .launch import jobs_cache

        cache = jobs_cache.cache_dir(current().package)
        lines = jobs_cache.listing(cache) if args.action == "list" else jobs_cache.prune(cache, args.keep, args.dry_run)
        print("\n".join(lines))
    else:
        parser.print_help()


def train(arguments: list[str]) -> None:
    """Run the training entry point exactly as `python -m <package>.train ARGUMENTS` runs it."""
    import runpy

    sys.argv = [f"{current().package} train", *arguments]  # Hydra reads its command line from sys.argv
    runpy.run_module(f"{current().package}.train", run_name="__main__", alter_sys=True)


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:  # run from a source folder that was never installed
        return "(not installed)"
