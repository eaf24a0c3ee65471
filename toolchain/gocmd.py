"""Running the ordinary ``go`` command for the toolchain: fixed environment, timing, module lookups."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from toolchain.versions import ToolchainError


def go_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return the environment for every go invocation: the caller's, plus GOTOOLCHAIN=local (never download another
    Go), CGO_ENABLED=0 (static binaries, as upstream releases) and GOFLAGS=-buildvcs=false; GOMODCACHE/GOCACHE stay
    the defaults so the module and build caches are shared with every other Go build on the machine."""
    env = dict(os.environ)
    env.update({"GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"})
    env.update(extra or {})
    return env


def go_binary() -> str:
    """Return the path of ``go`` on PATH; raises ToolchainError if Go is not installed."""
    go = shutil.which("go")
    if go is None:
        raise ToolchainError("the `go` command is not on PATH; install Go >= 1.26 (the pinned modules need it)")
    return go


def run(args: list[str], cwd: Path, *, label: str, env: dict[str, str] | None = None, nice: bool = False,
        log: Path | None = None) -> float:
    """Run ``go <args>`` in ``cwd`` and return its wall time in seconds.

    Prints ``label`` before and the seconds after. Output goes to ``log`` (appended) if given, else to stderr.
    ``nice`` lowers the priority (the machine is shared). Raises ToolchainError with the tail of the log on failure.
    """
    cmd = [go_binary(), *args]
    if nice and shutil.which("nice"):
        cmd = ["nice", "-n", "10", *cmd]
    print(f"[toolchain]   {label} ...", flush=True)
    start = time.monotonic()
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"$ {' '.join(cmd)}  (cwd {cwd})\n")
            fh.flush()
            proc = subprocess.run(cmd, cwd=cwd, env=go_env(env), stdout=fh, stderr=subprocess.STDOUT)
    else:
        proc = subprocess.run(cmd, cwd=cwd, env=go_env(env), stdout=sys.stderr, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        tail = ""
        if log is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise ToolchainError(f"`go {' '.join(args)}` failed in {cwd} (exit {proc.returncode})\n{tail}")
    print(f"[toolchain]   {label}: {seconds:.1f} s", flush=True)
    return seconds


def module_dir(module: str, version: str) -> Path:
    """Return the read-only directory of Go module ``module@version`` in the module cache.

    Uses ``go mod download -json`` (downloads on first use through GOPROXY). Raises ToolchainError if the proxy
    cannot serve it (the error text of the go command is included).
    """
    proc = subprocess.run(
        [go_binary(), "mod", "download", "-json", f"{module}@{version}"],
        env=go_env(), capture_output=True, text=True, cwd=Path.home(),
    )
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise ToolchainError(f"go mod download {module}@{version}: {proc.stderr.strip()}") from exc
    if info.get("Error") or not info.get("Dir"):
        raise ToolchainError(f"go mod download {module}@{version}: {info.get('Error') or proc.stderr.strip()}")
    return Path(info["Dir"])
