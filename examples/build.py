"""Generate one example project from this checkout, as its user would: `python examples/build.py NAME DEST`.

It answers Copier from `examples/NAME.yml` (`copier copy --trust --defaults --vcs-ref HEAD`, so uncommitted
template changes are included). An example with a folder `examples/NAME/` also gets what its user would add:
- `library/`: the source of the repository its `external_deps` answer names. It becomes a local git repository,
  tagged with the answer's ref, that replaces the answer's URL: no network is needed;
- `configs/`: config files that use it, copied into the project and committed.
Needs copier, git and uv on PATH (`nox -s examples` provides them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

EXAMPLES = Path(__file__).resolve().parent
TEMPLATE = EXAMPLES.parent


def build(name: str, destination: Path) -> Path:
    answers_file = EXAMPLES / f"{name}.yml"
    if not answers_file.exists():
        known = ", ".join(sorted(path.stem for path in EXAMPLES.glob("*.yml")))
        raise SystemExit(f"error: no example {name!r}: pick one of {known}")
    answers = yaml.safe_load(answers_file.read_text())
    extras = EXAMPLES / name
    data = []
    if (extras / "library").is_dir():
        (entry,) = answers["external_deps"]  # an example pins one library
        url, _, ref = entry.rpartition("@")
        local = destination.parent / f"{destination.name}-upstream" / url.rsplit("/", 1)[-1]
        make_repository(extras / "library", local, ref, answers)
        data = [f"--data=external_deps={json.dumps([f'{local}@{ref}'])}"]
    copier = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet", "--vcs-ref=HEAD"]
    run([*copier, f"--data-file={answers_file}", *data, str(TEMPLATE), str(destination)])
    if (extras / "configs").is_dir():
        shutil.copytree(extras / "configs", destination / "configs", dirs_exist_ok=True)
        run(["git", "add", "configs"], cwd=destination)
        commit(destination, f"Add the configs of the {name} example", answers)
    return destination


def make_repository(source: Path, repository: Path, tag: str, answers: dict[str, str]) -> None:
    shutil.copytree(source, repository)
    run(["git", "init", "--quiet", "--initial-branch=main"], cwd=repository)
    run(["git", "add", "-A"], cwd=repository)
    commit(repository, "The library at its first release", answers)
    run(["git", "tag", tag], cwd=repository)


def commit(repository: Path, message: str, answers: dict[str, str]) -> None:
    """Commit as the example's author where git has no identity configured (a fresh machine, CI)."""
    identity = ["-c", f"user.name={answers['author_name']}", "-c", f"user.email={answers['author_email']}"]
    configured = subprocess.run(["git", "config", "user.email"], cwd=repository, capture_output=True).returncode == 0
    run(["git", *([] if configured else identity), "commit", "--quiet", "-m", message], cwd=repository)


def run(command: list[str], cwd: Path | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(command[:4])} ... failed:\n{done.stderr.strip()}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python examples/build.py NAME DEST")
    print(build(sys.argv[1], Path(sys.argv[2]).resolve()))
