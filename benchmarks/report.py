"""Write BENCHMARKS.md from the results of run.py and outside.py.

    python benchmarks/report.py RESULTS.json... --out BENCHMARKS.md [--command "nox -s bench"] [--quick]

The machine and versions come first, then every goal with its measured figure, then each benchmark's method and
table, then benchmarks/slurm_sweep.md (written by slurm_sweep.py, which runs as root, apart) and
benchmarks/notes.md (written by hand: what was changed because of these figures, and what limits a missed goal)
where they exist.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from results import Section

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--command", default="nox -s bench")
    parser.add_argument("--quick", action="store_true", help="say that these are --quick figures (harness only)")
    args = parser.parse_args()
    environment: dict[str, str] = {}
    sections: list[Section] = []
    for path in args.results:
        found = json.loads(path.read_text())
        environment |= found.get("environment", {})
        sections += [Section.from_dict(section) for section in found["sections"]]
    args.out.write_text(render(sections, environment, args.command, args.quick))


def render(sections: list[Section], environment: dict[str, str], command: str, quick: bool) -> str:
    lines = ["# Benchmarks", ""]
    if quick:
        lines += ["**--quick: tiny counts that check the harness. These figures say nothing about speed.**", ""]
    lines += [
        f"Made by `{command}` on {datetime.now(UTC):%Y-%m-%d} from template commit {_commit()}. Every figure is a "
        "median over interleaved rounds, with the minimum and maximum in parentheses; a ratio compares contenders "
        "measured side by side in the same rounds. Regenerate with `nox -s bench` (about 25 minutes on 2 cores).",
        "",
        "| machine | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in {**_machine(), **environment}.items()),
        "",
        "## Goals",
        "",
        "| benchmark | goal | measured | met |",
        "|---|---|---|---|",
    ]
    for section in sections:
        lines += [f"| {section.title} | {goal.text} | {goal.figure} | {'yes' if goal.met else '**no**'} |"
                  for goal in section.goals]  # fmt: skip
    for section in sections:
        lines += ["", f"## {section.title}", "", section.method, ""]
        lines += ["| " + " | ".join(section.columns) + " |", "|" + "---|" * len(section.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in section.rows]
        lines += [*([""] if section.notes else []), *(f"- {note}" for note in section.notes)]
    for written_apart in ("slurm_sweep.md", "notes.md"):  # slurm_sweep.py runs as root, outside `nox -s bench`
        if (HERE / written_apart).is_file():
            lines += ["", (HERE / written_apart).read_text().strip()]
    return "\n".join(lines) + "\n"


def _machine() -> dict[str, str]:
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo") if line.startswith("model name")), "")
    memory = next((line.split()[1] for line in _read("/proc/meminfo") if line.startswith("MemTotal")), "0")
    return {
        "CPU": cpu or platform.processor() or "unknown",
        "cores": str(os.cpu_count()),
        "memory": f"{int(memory) / 1024**2:.0f} GiB",
        "OS": f"{platform.system()} {platform.release()}",
    }


def _read(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=HERE, capture_output=True, text=True).stdout
    return (found.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty.strip() else "")


if __name__ == "__main__":
    main()
