"""Is a newer version of the template this project was generated from out? (`nox -s template_version`)

`.copier-answers.yml` records the template's source (`_src_path`) and the version the project is at (`_commit`).
This lists the source's tags with `git ls-remote` and compares the release tags (`vX.Y.Z`). It uses only the
standard library, so it runs with nox's own Python, outside the project's venv.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ANSWERS = Path(".copier-answers.yml")
RELEASE = re.compile(r"^v?(\d+(?:\.\d+)*)$")
SHORTCUTS = {"gh:": "https://github.com/", "gl:": "https://gitlab.com/"}  # Copier's URL prefixes
UPDATE = "commit your work, then run `copier update --trust --defaults`"


def answer(text: str, key: str) -> str | None:
    found = re.search(rf"^{key}:\s*['\"]?(.*?)['\"]?\s*$", text, flags=re.MULTILINE)
    return found.group(1) if found else None


def release(tag: str) -> tuple[int, ...] | None:
    found = RELEASE.match(tag)
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def remote_tags(source: str) -> list[str]:
    for prefix, url in SHORTCUTS.items():
        if source.startswith(prefix):
            source = url + source.removeprefix(prefix)
    try:
        listed = subprocess.run(
            ["git", "ls-remote", "--tags", "--refs", source], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(f"error: {source} did not answer within 60 s: check the network, then try again") from None
    if listed.returncode != 0:
        reason = (listed.stderr.strip().splitlines() or [f"exit code {listed.returncode}"])[-1]
        where = "check the network, or _src_path in .copier-answers.yml"
        raise SystemExit(f"error: cannot list the template's versions at {source} ({reason}): {where}")
    return [line.rsplit("refs/tags/", 1)[-1] for line in listed.stdout.splitlines()]


def main() -> None:
    if not ANSWERS.is_file():
        raise SystemExit(f"error: no {ANSWERS} here: run this from the project's root folder")
    text = ANSWERS.read_text()
    source, current = answer(text, "_src_path"), answer(text, "_commit")
    if not source or not current:
        raise SystemExit(f"error: {ANSWERS} records no template source or version: was the project made by Copier?")
    releases = sorted((version, tag) for tag in remote_tags(source) if (version := release(tag)))
    if not releases:
        print(f"the template at {source} has no release tags (vX.Y.Z)")
        return
    newest, newest_tag = releases[-1]
    # `v0.2.0-3-gabc1234`: a commit 3 after the release v0.2.0 (Copier's form for a commit between releases)
    tag, _, after = current.partition("-")
    here = release(tag)
    if here is None:
        print(f"this project is at template commit {current}; the newest release is {newest_tag}")
    elif newest > here:
        print(f"template {newest_tag} is out (this project is at {current}): {UPDATE}")
    elif after:
        print(f"up to date: template {current} is a commit after the newest release, {newest_tag}")
    else:
        print(f"up to date: template {current} is the newest release")


if __name__ == "__main__":
    sys.exit(main())
