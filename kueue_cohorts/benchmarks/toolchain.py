"""The toolchain's two paths to a binary, side by side (issue 15 item 6): an official release archive against a
cold Go build of the same entry.

Run: ``.venv/bin/python -m kueue_cohorts.benchmarks.toolchain [--archives etcd kubernetes pulumi] [--build etcd]
[--write]``
(binaries from ``python -m kueue_cohorts.toolchain ensure``). The official archives are not reachable from our
machines, so each
archive is made here from the toolchain's own build of its executables, laid out at the member paths versions.toml
pins (gzip level 6, as ``tar czf``), served by ``python -m http.server`` on loopback, and installed through the real
download path (``toolchain.archives.install``: download, SHA-256, extract, staged install) into an empty cache. The
Go side builds each ``--build`` entry with ``toolchain.build.build`` into an empty cache and an empty ``GOCACHE``
(the Go module cache stays warm: module downloads are network time on either path). Loopback has no network cost:
the archive sizes are printed so that a link's bandwidth can be added (the official Kubernetes server archive also
carries container images, about four times the size of its binaries). Prints seconds, sizes, the ratio and the load
average; ``--write`` records ``benchmarks/results/toolchain.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

from kueue_cohorts import toolchain
from kueue_cohorts.benchmarks import add_write_flag, load_average, save, summary, utc_now
from kueue_cohorts.toolchain import archives, build, versions


@contextlib.contextmanager
def _served(root: Path) -> Iterator[str]:
    """Serve ``root`` with ``python -m http.server`` on a free loopback port; yield its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "/", timeout=1).close()
                break
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait()


def _pack(archive: versions.Archive, into: Path) -> tuple[str, int, int]:
    """Write ``archive``'s file under ``into`` from the toolchain's own executables at the pinned member paths;
    return (SHA-256, archive bytes, executable bytes)."""
    path = into / archive.file_name
    raw = 0
    with tarfile.open(path, "w:gz", compresslevel=6) as tar:
        for output, member in archive.members.items():
            exe = toolchain.binary(output)
            raw += exe.stat().st_size
            tar.add(exe, arcname=member)
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size, raw


def measure_archive(name: str, spec: versions.Versions, scratch: Path) -> dict[str, Any]:
    """Install entry ``name`` from an archive of its own executables over loopback into an empty cache."""
    served = scratch / "served"
    served.mkdir(exist_ok=True)
    sha, size, raw = _pack(spec.archives[name], served)
    with _served(served) as url, mock.patch.dict(os.environ, {"KUEUE_COHORTS_CACHE": str(scratch / f"cache-{name}"),
                                                             archives.MIRROR_ENV: url}):
        load_before = load_average()
        start = time.monotonic()
        if not archives.install(spec.entries[name], replace(spec.archives[name], sha256=sha)):
            raise RuntimeError(f"the archive of {name} was not installed")
        seconds = time.monotonic() - start
    return {"seconds": round(seconds, 2), "archive_mb": round(size / 1e6, 1), "executables_mb": round(raw / 1e6, 1),
            "load_before": load_before, "load_after": load_average()}


def measure_build(name: str, spec: versions.Versions, scratch: Path) -> dict[str, Any]:
    """Build entry ``name`` from its Go module into an empty cache with an empty Go build cache."""
    with mock.patch.dict(os.environ, {"KUEUE_COHORTS_CACHE": str(scratch / f"build-{name}"),
                                         "GOCACHE": str(scratch / f"gocache-{name}")}):
        load_before = load_average()
        start = time.monotonic()
        steps = build.build(spec.entries[name])
        seconds = time.monotonic() - start
    return {"seconds": round(seconds, 1), "steps": {k: round(v, 1) for k, v in steps.items()},
            "load_before": load_before, "load_after": load_average()}


def main(argv: list[str] | None = None) -> int:
    """Print (and with --write record) both paths' seconds per entry and their ratio. Exit 0."""
    spec = versions.load()
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.benchmarks.toolchain",
                                     description=summary(__doc__))
    parser.add_argument("--archives", nargs="+", choices=sorted(spec.archives), default=sorted(spec.archives))
    parser.add_argument("--build", nargs="*", choices=sorted(spec.archives), default=["etcd"],
                        help="entries also built cold from their Go module in this run (default: etcd)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-toolchain-") as tmp:
        for name in args.archives:
            rows[name] = {"archive": measure_archive(name, spec, Path(tmp))}
        for name in args.build:
            rows.setdefault(name, {})["go_build"] = measure_build(name, spec, Path(tmp))
    print(f"{'entry':<12} {'archive s':>10} {'archive MB':>11} {'go build s':>11} {'ratio':>7}")
    for name, row in rows.items():
        archive, built = row.get("archive"), row.get("go_build")
        if archive and built:
            row["ratio_build_to_archive"] = round(built["seconds"] / archive["seconds"], 1)
        cells = [archive["seconds"] if archive else "-", archive["archive_mb"] if archive else "-",
                 built["seconds"] if built else "-", row.get("ratio_build_to_archive", "-")]
        print(f"{name:<12} {cells[0]:>10} {cells[1]:>11} {cells[2]:>11} {cells[3]:>7}")
    print(f"load average {load_average()}; {os.cpu_count()} cores")
    save("toolchain", {"measured_at": utc_now(), "cores": os.cpu_count(), "entries": rows}, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
