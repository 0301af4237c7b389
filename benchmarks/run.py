"""The benchmarks that run inside a generated project's environment: the loop, checkpoints, resume, the launcher.

    python benchmarks/run.py --package my_experiments [--quick] [--rounds N] [--lightning DIR] [--only NAMES]
                             [--json OUT]

`nox -s bench` runs it in a freshly generated project, with Lightning installed into DIR beside the project's
locked environment, then adds outside.py's figures and writes BENCHMARKS.md (report.py). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import checkpoint_cost
import launcher
import loop
import resume

BENCHMARKS = ("loop", "checkpoint", "resume", "launcher")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", required=True, help="the generated project's package, e.g. my_experiments")
    parser.add_argument("--quick", action="store_true", help="tiny counts: checks the harness, not the speed")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default: 5, or 1 with --quick)")
    parser.add_argument("--lightning", type=Path, help="a folder holding Lightning (nox -s bench installs it)")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help=f"some of {','.join(BENCHMARKS)}")
    parser.add_argument("--json", type=Path, help="write the results here (default: print them)")
    args = parser.parse_args()
    import samebits.project

    samebits.project.use(args.package)  # the benchmarks compose and launch through the library, for this project
    chosen = args.only.split(",")
    if unknown := sorted(set(chosen) - set(BENCHMARKS)):
        parser.error(f"no benchmark {unknown[0]!r}: pick from {', '.join(BENCHMARKS)}")
    rounds = args.rounds or (1 if args.quick else 5)
    sections = []
    if "loop" in chosen:
        sections += loop.run(args.package, rounds, args.quick, args.lightning, log)
    if "checkpoint" in chosen:
        sections += checkpoint_cost.run(args.package, rounds, args.quick, log)
    if "resume" in chosen:
        sections += resume.run(args.package, rounds, args.quick, log)
    if "launcher" in chosen:
        sections += launcher.run(args.package, 40 if args.quick else 1000, rounds, log)
    results = {"environment": environment(args.lightning), "sections": [section.as_dict() for section in sections]}
    found = json.dumps(results, indent=1)
    if args.json is None:
        print(found)
    else:
        args.json.write_text(found)


def environment(lightning: Path | None) -> dict[str, str]:
    """The versions that the figures depend on, as this environment has them."""
    import platform

    import torch

    found = {"Python": platform.python_version(), "torch": torch.__version__}
    if lightning is not None:
        sys.path.insert(0, str(lightning))
        import lightning as lightning_package

        found["Lightning"] = lightning_package.__version__
    found["torch threads by default"] = str(torch.get_num_threads())
    return found


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
