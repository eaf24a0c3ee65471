"""Running the ordinary ``go`` command for the toolchain: fixed environment, timing, module lookups."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kueue_cohorts.toolchain.versions import ToolchainError


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


#: Seconds between two progress lines while a go command runs (issue: cold builds of up to 12 minutes printed
#: nothing while they ran).
PROGRESS_EVERY_S = 15.0


def _wait_with_progress(proc: subprocess.Popen[bytes], label: str, start: float, every: float) -> int:
    """Wait for ``proc``, printing ``[toolchain]   <label>: still running, <n> s elapsed`` every ``every`` seconds
    (to stdout, flushed); return its exit status. On any interruption (Ctrl-C) the go command is killed first."""
    try:
        while True:
            try:
                return proc.wait(timeout=every)
            except subprocess.TimeoutExpired:
                print(f"[toolchain]   {label}: still running, {time.monotonic() - start:.0f} s elapsed", flush=True)
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def run(args: list[str], cwd: Path, *, label: str, env: dict[str, str] | None = None, nice: bool = False,
        log: Path | None = None, progress_every: float = PROGRESS_EVERY_S) -> float:
    """Run ``go <args>`` in ``cwd`` and return its wall time in seconds.

    Prints ``label`` before, a progress line every ``progress_every`` seconds while it runs (``label`` names the
    binaries, e.g. ``go build kube-apiserver kube-controller-manager kube-scheduler``, and the elapsed seconds), and
    the seconds after. Output goes to ``log`` (appended) if given, else to stderr. ``nice`` lowers the priority
    (the machine is shared). Raises ToolchainError with the tail of the log on failure.
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
            proc = subprocess.Popen(cmd, cwd=cwd, env=go_env(env), stdout=fh, stderr=subprocess.STDOUT)
            returncode = _wait_with_progress(proc, label, start, progress_every)
    else:
        proc = subprocess.Popen(cmd, cwd=cwd, env=go_env(env), stdout=sys.stderr, stderr=subprocess.STDOUT)
        returncode = _wait_with_progress(proc, label, start, progress_every)
    seconds = time.monotonic() - start
    if returncode != 0:
        tail = ""
        if log is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise ToolchainError(f"`go {' '.join(args)}` failed in {cwd} (exit {returncode})\n{tail}")
    print(f"[toolchain]   {label}: {seconds:.1f} s", flush=True)
    return seconds


@functools.cache
def _gomodcache() -> Path:
    """``go env GOMODCACHE`` (asked once per process)."""
    out = subprocess.run([go_binary(), "env", "GOMODCACHE"], env=go_env(), capture_output=True, text=True).stdout
    return Path(out.strip())


def escape_path(path: str) -> str:
    """Return a module path or version as the module cache spells it on disk: every upper-case letter becomes
    ``!`` and its lower case (``golang.org/x/mod/module.EscapePath``), e.g. ``github.com/Azure/x`` ->
    ``github.com/!azure/x``."""
    return "".join(f"!{ch.lower()}" if ch.isupper() else ch for ch in path)


def cached_module_dir(module: str, version: str, modcache: Path) -> Path | None:
    """Return ``<modcache>/<module>@<version>`` when the go command finished extracting it there (its
    ``cache/download/<module>/@v/<version>.ziphash`` exists and no ``.partial`` marker does, the checks of
    ``cmd/go/internal/modfetch.DownloadDir``), else None."""
    mod, ver = escape_path(module), escape_path(version)
    directory = modcache / f"{mod}@{ver}"
    meta = modcache / "cache" / "download" / mod / "@v"
    if directory.is_dir() and (meta / f"{ver}.ziphash").is_file() and not (meta / f"{ver}.partial").exists():
        return directory
    return None


@functools.cache
def module_dir(module: str, version: str) -> Path:
    """Return the read-only directory of Go module ``module@version`` in the module cache.

    A module already extracted in the cache is found on disk (:func:`cached_module_dir`, no go command: the sandbox
    asks for eight of them on every start); otherwise ``go mod download -json`` fetches it through GOPROXY. Results
    are remembered for the process (module versions are immutable). Raises ToolchainError if the proxy cannot
    serve it (the error text of the go command is included).
    """
    found = cached_module_dir(module, version, _gomodcache())
    if found is not None:
        return found
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
