"""git in a folder, the identity the tests commit as, and local repositories as submodule sources."""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.org"]
# Local repositories as submodule sources (every project has one: the library, from this checkout).
GIT_FILE = ["git", "-c", "protocol.file.allow=always"]


def git(project: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout.strip()


def make_package_repo(folder: Path, name: str, versions: list[str]) -> list[str]:
    """A local git repo holding a tiny Python package, one commit per version; returns the commit SHAs."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main"], cwd=folder, check=True)
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1.0"\n\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
    )
    shas = []
    for version in versions:
        (folder / "src" / name).mkdir(parents=True, exist_ok=True)
        (folder / "src" / name / "__init__.py").write_text(f'VERSION = "{version}"\n')
        subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
        subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-m", version], cwd=folder, check=True)
        shas.append(git(folder, "rev-parse", "HEAD"))
    return shas
