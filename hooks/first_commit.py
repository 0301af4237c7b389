"""Copier task 4: record the generated project as its first commit (no-op if the repository has commits).

The commit holds what the template rendered and what the tasks made (uv.lock; the submodules, which their task
stages), and nothing else: a file that was already in the folder (yours, or left by an earlier copy) stays
untracked, named in one line. Without a configured git identity the commit is authored by the author given to
Copier, so that the copy never stops on `git commit` asking who you are.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import jinja2
import yaml

from _common import run

MADE_BY_TASKS = {"uv.lock"}

parser = argparse.ArgumentParser()
parser.add_argument("--template", required=True)
parser.add_argument("--version", required=True)
parser.add_argument("--author-name", required=True)
parser.add_argument("--author-email", required=True)
parser.add_argument("--template-dir", type=Path, required=True, help="the folder Copier renders (_subdirectory)")
parser.add_argument("--answers-file", default=".copier-answers.yml")
args = parser.parse_args()


def git_config(key: str) -> str:
    done = subprocess.run(["git", "config", key], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def rendered(template_dir: Path, context: dict) -> set[str]:
    """The files Copier renders from `template_dir`: each part of a path rendered with the answers, `.jinja`
    dropped; as in Copier, a part that renders empty leaves the file out."""
    env = jinja2.Environment(extensions=["jinja2_ansible_filters.AnsibleCoreFiltersExtension"])
    files = set()
    for source in template_dir.rglob("*"):
        parts = [env.from_string(part).render(context) for part in source.relative_to(template_dir).parts]
        if source.is_file() and all(parts):
            files.add("/".join(parts).removesuffix(".jinja"))
    return files


has_commit = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], capture_output=True, check=False)
if has_commit.returncode != 0:
    answers = yaml.safe_load(Path(args.answers_file).read_text()) or {}
    ours = rendered(args.template_dir, {**answers, "_copier_conf": {"answers_file": args.answers_file}})
    ours |= MADE_BY_TASKS
    untracked = run(["git", "ls-files", "--others", "--exclude-standard", "-z"], what="git ls-files").split("\0")
    foreign = sorted(path for path in untracked if path and path not in ours)
    if foreign:
        names = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        print(f"note: not from the template, so left out of the first commit (untracked): {names}", file=sys.stderr)
    run(["git", "add", "--", *sorted(ours & set(untracked))], what="git add")
    identity = []
    if not git_config("user.name"):
        identity += ["-c", f"user.name={args.author_name}"]
    if not git_config("user.email"):
        identity += ["-c", f"user.email={args.author_email}"]
    message = f"Initial commit from {args.template} {args.version}"
    run(["git", *identity, "commit", "--quiet", "--no-verify", "-m", message], what="git commit")
