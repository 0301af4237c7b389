"""torchrun with its workers forked from a server that has imported torch, for the proof's torchrun case.

    python -m samebits.proof.forked_torchrun --preload MODULE,... TORCHRUN_ARGS -m MODULE ARGS

The launcher is torchrun's own (`torch.distributed.run.main`: its arguments, rendezvous, elastic agent, signal
handling and exit codes). One thing differs: torchrun starts a `-m MODULE` worker as a new interpreter, which
imports torch again, while here each worker is a function that runs the module, started by the agent with the
`forkserver` start method (`LaunchConfig.start_method`, which torch offers for function entrypoints). The launcher's
fork server imports `--preload` once; each worker is still its own process, with its own pid and rank
environment, and reseeds torch's and NumPy's generators from the system as a forked run does (forks.run_as_main).
`<package> proof --fresh` runs the torchrun command line itself, every worker a new interpreter
(docs/decisions/0018-torchrun-workers-forked-in-the-proof.md).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any

from .forks import run_as_main


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] != "--preload":
        raise SystemExit("usage: python -m samebits.proof.forked_torchrun --preload MODULE,... TORCHRUN_ARGS")
    preload, torchrun_args = [name for name in argv[1].split(",") if name], argv[2:]
    from torch.distributed import run as torchrun

    multiprocessing.get_context("forkserver").set_forkserver_preload(preload)
    launch = getattr(torchrun, "elastic_launch", None)
    if launch is None:
        raise SystemExit("this torch's torchrun has no elastic_launch to fork its workers with: prove with --fresh")
    torchrun.elastic_launch = _forking(launch)  # looked up when torchrun's run() launches, in this process only
    try:
        torchrun.main(torchrun_args)
    finally:
        torchrun.elastic_launch = launch


def _forking(launch: Callable[..., Any]) -> Callable[..., Any]:
    def forking_launch(config: Any, entrypoint: str) -> Callable[..., Any]:
        def launched(*cmd_args: str) -> Any:
            # torchrun's command for `-m MODULE ARGS` is: python -u -m MODULE ARGS
            if len(cmd_args) < 3 or cmd_args[:2] != ("-u", "-m"):
                raise SystemExit(f"forked_torchrun runs `-m MODULE` workers only, not {' '.join(cmd_args[:3])}")
            config.start_method = "forkserver"
            return launch(config=config, entrypoint=run_worker)(cmd_args[2], list(cmd_args[3:]))

        return launched

    return forking_launch


def run_worker(module: str, args: list[str]) -> None:
    """In a worker: run `python -m module args` as torchrun's worker would, then return to torch's agent, which
    waits for a worker's return value (a worker that ended the process itself would leave it waiting). A non-zero
    exit ends the worker with that code, as a worker started by torchrun ends."""
    os.environ.pop("REPRODUCIBILITY_QUICK_EXIT", None)  # the quick exit ends the process; this must return
    code = run_as_main(module, args)
    atexit._run_exitfuncs()  # what Python does at exit, which a process of multiprocessing's skips
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
