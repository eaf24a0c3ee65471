"""Reading the base side of a pull request from git: the stack file at a ref, and the whole tree at a ref."""
from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any, Optional

from kueue_cohorts.components.settings import stackfile


class GitError(RuntimeError):
    """A git command failed (unknown ref, not a repository); the message carries git's stderr."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def resolve(repo: Path, ref: str) -> str:
    """The commit id (40 hex) of `ref` in `repo`. Raises GitError if git cannot resolve it."""
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise GitError(f"git cannot resolve {ref!r} in {repo}: {proc.stderr.decode().strip() or 'unknown ref'}")
    return proc.stdout.decode().strip()


def file_at(repo: Path, ref: str, path: str) -> Optional[str]:
    """The text of `path` (relative to the repository root, e.g. `stacks/Pulumi.staging.yaml`) at `ref`
    (`git show REF:PATH`), or None if the file does not exist at that ref. Raises GitError for an unknown ref."""
    commit = resolve(repo, ref)
    proc = _git(repo, "show", f"{commit}:{path}")
    if proc.returncode != 0:
        return None
    return proc.stdout.decode()


def stack_at(repo: Path, ref: str, path: str) -> Optional[dict[str, Any]]:
    """The stack file `path` (relative to the repository root: `stacks/Pulumi.<stack>.yaml`) at `ref`, parsed by the
    one stack-file reader (its errors name `REF:PATH`), or None when the file does not exist at that ref. Raises
    GitError for an unknown ref, components.settings.stackfile.StackFileError for a file that is no stack file."""
    text = file_at(repo, ref, path)
    return None if text is None else stackfile.parse(text, f"{ref}:{path}")


def export_tree(repo: Path, ref: str, dest: Path) -> Path:
    """Write the tracked files of `ref` into `dest` (`git archive`), for running the base commit's program.
    Returns `dest`. Raises GitError."""
    commit = resolve(repo, ref)
    proc = _git(repo, "archive", "--format=tar", commit)
    if proc.returncode != 0:
        raise GitError(f"git archive {ref} failed: {proc.stderr.decode().strip()}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def toplevel(path: Path) -> Path:
    """The root of the git work tree containing `path`. Raises GitError outside a repository."""
    proc = _git(path, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise GitError(f"{path} is not in a git work tree: {proc.stderr.decode().strip()}")
    return Path(proc.stdout.decode().strip())
