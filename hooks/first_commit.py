"""Copier task 3: record the generated project as its first commit (no-op if the repository has commits).

Without a configured git identity the commit is authored by the author given to Copier, so that the copy
never stops on `git commit` asking who you are.
"""

import argparse
import subprocess

from _common import run

parser = argparse.ArgumentParser()
parser.add_argument("--template", required=True)
parser.add_argument("--version", required=True)
parser.add_argument("--author-name", required=True)
parser.add_argument("--author-email", required=True)
args = parser.parse_args()


def git_config(key: str) -> str:
    done = subprocess.run(["git", "config", key], capture_output=True, text=True, check=False)
    return done.stdout.strip()


has_commit = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], capture_output=True, check=False)
if has_commit.returncode != 0:
    identity = []
    if not git_config("user.name"):
        identity += ["-c", f"user.name={args.author_name}"]
    if not git_config("user.email"):
        identity += ["-c", f"user.email={args.author_email}"]
    run(["git", "add", "--all"], what="git add")
    message = f"Initial commit from {args.template} {args.version}"
    run(["git", *identity, "commit", "--quiet", "--no-verify", "-m", message], what="git commit")
