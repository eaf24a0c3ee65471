"""A throwaway git repository holding a copy of the project, for the summary tests (never touches /work/main)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from kueue_cohorts.components.settings import PROJECT

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; return stdout. Raises CalledProcessError."""
    env_args = ["-c", "user.name=prsummary-test", "-c", "user.email=prsummary@test.invalid", "-c",
                "commit.gpgsign=false"]
    return subprocess.run(["git", "-C", str(repo), *env_args, *args], check=True, capture_output=True,
                          text=True).stdout


def project_files() -> list[str]:
    """The checkout's files as the working tree has them: tracked plus untracked-but-not-ignored (no .venv,
    caches or state), relative paths."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         check=True, capture_output=True).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


class TempRepo:
    """A git repo in `path` holding a copy of the checkout's working tree (see project_files); `commit()`
    records the current files, `set_config()` changes a stack file's config."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        for rel in project_files():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, path / rel)
        git(path, "init", "-q", "-b", "main")

    def stack_file(self, stack: str) -> Path:
        """stacks/Pulumi.<stack>.yaml of this repo."""
        return self.path / "stacks" / f"Pulumi.{stack}.yaml"

    def config(self, stack: str) -> dict[str, Any]:
        """The stack's `kueue-cohorts:*` config, prefix stripped (plain data, safe to change and write back)."""
        doc = yaml.safe_load(self.stack_file(stack).read_text())
        return {k.split(":", 1)[1]: v for k, v in doc["config"].items() if k.startswith(f"{PROJECT}:")}

    def set_config(self, stack: str, key: str, value: Any) -> None:
        """Set `kueue-cohorts:<key>` in the stack file (working tree only)."""
        doc = yaml.safe_load(self.stack_file(stack).read_text())
        doc["config"][f"{PROJECT}:{key}"] = value
        self.stack_file(stack).write_text(yaml.safe_dump(doc, sort_keys=False))

    def commit(self, message: str = "base") -> str:
        """Commit every file; return the commit id."""
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)
        return git(self.path, "rev-parse", "HEAD").strip()
