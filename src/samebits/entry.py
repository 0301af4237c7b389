"""The entry point behind `python -m <package>.train` (and `<package> train`): every experiment, sweep and
launcher runs it unchanged.

    python -m <package>.train                         # the default experiment
    python -m <package>.train optim.lr=1e-3 seed=1    # any override
    python -m <package>.train experiment=wide_mlp     # an experiment file from configs/experiment/
    torchrun --nproc-per-node 2 -m <package>.train    # the same loop, data-parallel
    python -m <package>.train -m seed=0,1,2           # a sweep: every point is checked before the first trains

It composes and checks the config, claims the run folder (one name is one experiment, trained once) and runs
the loop (train.py). Started again on the same config, a run resumes. SIGTERM, SIGUSR1 or SIGUSR2 make it save
at the next step and exit with code 75 ("requeue me"); Ctrl-C does the same and exits with 130. It leaves in the
run folder `config.yaml`, `metrics.jsonl`, `checkpoints/`, `status.json` (how the latest attempt ended),
`run.lock` and, once finished, `summary.json`. Every exit code is listed in core/errors.py.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import hydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from .composition import composed, config_dir
from .core import (
    distributed,
    failpoints,
    naming,  # noqa: F401  (registers the `auto_run_name` resolver that configs/train.yaml uses)
    preemption,
)
from .core.checks import check
from .core.config import identity
from .core.determinism import make_deterministic
from .core.errors import Interrupted, exit_on_error, one_line_config_errors
from .core.run_folder import RunFolder
from .core.sweep import check_sweep
from .objective import Objective
from .project import current, use
from .train import train as train_loop

log = logging.getLogger(__name__)


def train(package: str) -> None:
    """`python -m <package>.train`: the project's entry point calls this with its import name."""
    preemption.install_handlers()  # first thing: a signal from here on leads to a checkpoint, not a lost step
    use(package)
    try:
        failpoints.run_then_exit(_cli)  # the reproducibility proof skips the interpreter's teardown (see failpoints.py)
    finally:
        preemption.ignore_further_requests()  # the interpreter's teardown follows


def _cli() -> None:
    package = current().package
    with exit_on_error():
        try:
            with one_line_config_errors(hint=f"list every setting with: python -m {package}.train --cfg job"):
                check_sweep(
                    sys.argv[1:], composed
                )  # with -m, every point of a sweep is checked before the first one trains
                with _composed_once_without_a_sweep(sys.argv[1:]):
                    hydra.main(version_base="1.3", config_path=config_dir(), config_name="train")(_main)()
        except KeyboardInterrupt:  # a second Ctrl-C before the run folder was claimed: nothing to record
            raise Interrupted("nothing was saved") from None


@contextlib.contextmanager
def _composed_once_without_a_sweep(arguments: list[str]) -> Iterator[None]:
    """Hydra composes the whole config once only to read `hydra.mode` from it, then again to run it: a start-up
    cost paid by every run (docs/decisions/0016-one-composition-per-run.md). Our configs never set `hydra.mode`, so
    without `-m`, `--multirun` or a `hydra.mode=` override the answer is known: none, which makes Hydra run once,
    as it does when its first composition finds no mode."""
    from hydra._internal.hydra import Hydra

    if {"-m", "--multirun"} & set(arguments) or any(arg.lstrip("+").startswith("hydra.mode=") for arg in arguments):
        yield
        return
    get_mode = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hydra.get_mode = get_mode  # type: ignore[method-assign]


def _main(cfg: DictConfig) -> float:
    # Each run of a sweep (-m) ends here: Hydra would keep an error until the rest of the sweep had run.
    with exit_on_error():
        return _run(cfg)


def _run(cfg: DictConfig) -> float:
    OmegaConf.resolve(cfg)
    trainer = cfg.trainer
    check(cfg)  # before anything is loaded or written: one line per mistake, exit code 2
    objective: Objective = instantiate(cfg.objective, _convert_="all")
    context = distributed.context_from_env()
    device = make_deterministic(trainer.num_threads, distributed.device_for(context, trainer.device))
    distributed.start(context, device)
    if not context.is_main:
        logging.getLogger().setLevel(logging.WARNING)  # one log per run, from rank 0
    run = RunFolder(Path(cfg.paths.run_dir), context)
    # Rank 0 locks the folder; another config under this name is refused.
    run.claim(identity(cfg), cfg.run_name, trainer.allow_code_change)
    if (finished := run.finished_metrics()) is not None:  # one name is one experiment, trained once
        log.info("%s has finished already (see %s/summary.json): nothing to do", cfg.run_name, run.run_dir)
        distributed.stop(context)
        return finished[objective.main_metric]
    with run.attempt():  # status.json records how this attempt ends, however it ends
        return train_loop(cfg, run, objective, context, device)
