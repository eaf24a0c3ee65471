"""Running ``python -m kueue_cohorts.deploy`` as a user does, on a copy of the project whose stack files a test may
edit.

The copy is deploy.scratch.clone's (exactly the files git tracks, .venv linked to the running venv); commands get
a bare environment (HOME, PATH, LANG) plus what the test passes, so the developer's own PULUMI_* variables never
leak in, and a temporary PULUMI_BACKEND_URL unless the test sets another.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Optional

import yaml

from kueue_cohorts.deploy.scratch import clone

__all__ = ["bare_env", "clone", "deploy", "edit_stack"]


def bare_env(tmp: Path, **extra: str) -> dict[str, str]:
    """HOME, PATH, LANG, a file backend in ``tmp``, the toolchain cache of this user; then ``extra``."""
    env = {
        "HOME": os.environ["HOME"],
        "PATH": os.pathsep.join(("/usr/local/bin", "/usr/bin", "/bin")),
        "LANG": "C.UTF-8",
        "PULUMI_BACKEND_URL": f"file://{tmp / 'state'}",
    }
    for key in ("KUEUE_COHORTS_CACHE", "KUEUE_COHORTS_SANDBOX_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def deploy(project: Path, *args: str, env: dict[str, str], timeout: float = 800,
           **popen: Any) -> subprocess.CompletedProcess:
    """Run ``<project>/.venv/bin/python -m kueue_cohorts.deploy ARGS`` in ``project``; return the completed process
    (text)."""
    return subprocess.run([str(project / ".venv" / "bin" / "python"), "-m", "kueue_cohorts.deploy", *args],
                          cwd=project, env=env,
                          capture_output=True, text=True, timeout=timeout, **popen)


def edit_stack(project: Path, stack: str, config: Optional[dict[str, Any]] = None,
               drop: tuple[str, ...] = (), top: Optional[dict[str, Any]] = None) -> Path:
    """Set ``kueue-cohorts:<key>`` values (``config``), remove keys (``drop``) and set top-level keys (``top``) in
    ``<project>/stacks/Pulumi.<stack>.yaml``; return the file."""
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text())
    for key, value in (config or {}).items():
        doc.setdefault("config", {})[f"kueue-cohorts:{key}"] = value
    for key in drop:
        doc.get("config", {}).pop(f"kueue-cohorts:{key}", None)
    doc.update(top or {})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
