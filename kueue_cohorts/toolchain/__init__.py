"""The pinned toolchain: every binary the project runs, from its official release archive (SHA-256 pinned) or
built from the Go module proxy, and cached by version.

Public API (used by deploy/, sandbox/, tests and benchmarks):

- ``ensure(names=None) -> dict[str, Path]``: install (official archive) or build what is missing (all pinned
  binaries if ``names`` is None), install the Pulumi plugins; returns executable name -> path. The official
  archives download while the Go builds run (one Go build at a time: each already uses every core).
- ``for_stack(path) -> list[str]``: what ``up`` / ``preview`` of that stack file need: the engine (``ENGINE``:
  pulumi and its kubernetes provider), plus the sandbox's binaries (``SANDBOX``) when the stack targets the sandbox.
- ``binary(name) -> Path``: the executable, without building; raises ToolchainError if not built yet.
- ``module_dir(module, version) -> Path``: read-only directory of a Go module in the module cache.
- ``crd_files(name) -> list[Path]``, ``crd_documents(name) -> list[dict]``, ``chart_dir(name) -> Path``: CRDs
  (files, or parsed and cached) and charts read from pinned Go modules.
- ``cache_root() -> Path``: ``$KUEUE_COHORTS_CACHE`` or ``~/.cache/kueue-cohorts``.

Binary names: pulumi, pulumi-resource-kubernetes, etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kubectl, kwok, kueue, jobset-controller-manager, trainer-controller-manager, kserve-manager, actionlint (versions in
toolchain/versions.toml).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from kueue_cohorts.toolchain import archives, build, gocmd, paths, plugins, versions
from kueue_cohorts.toolchain.paths import cache_root, pulumi_home
from kueue_cohorts.toolchain.versions import ToolchainError, UnknownNameError

__all__ = [
    "ToolchainError", "UnknownNameError", "binary", "cache_root", "chart_dir", "crd_documents", "crd_files", "ensure",
    "module_dir",
    "pulumi_home", "analyzer_shim", "all_binaries", "for_stack", "group", "ENGINE", "SANDBOX", "REAL_NODE",
]

ENGINE = ("pulumi", "pulumi-resource-kubernetes")
"""What every ``up``, ``preview`` and ``destroy`` needs: the pinned engine and its kubernetes provider. A stack of
cluster mode kubeconfig (a real cluster) needs nothing else."""
SANDBOX = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue",
           "jobset-controller-manager", "trainer-controller-manager", "kserve-manager")
"""The local sandbox's executables (sandbox/cluster.py ``BINARIES``, one per component; a unit test keeps them
equal). Prometheus (``sandbox up --with-prometheus``) and actionlint (``make lint``) are not among them."""


@functools.cache
def _versions() -> versions.Versions:
    return versions.load()


REAL_NODE = "real-node"
"""The on-demand group of the sandbox's real node (``sandbox up --real-node``, issue 44): runc, containerd and its
shim and ctr, the kubelet, the CNI plugins. Built only when asked for (:func:`group`), never by a plain ``ensure``."""


def group(name: str) -> list[str]:
    """Return the executables of the versions.toml entries whose ``group`` is ``name`` (e.g. :data:`REAL_NODE`), in
    file order. Raises UnknownNameError (a ToolchainError) for a group no entry has, naming the groups there are."""
    entries = _versions().entries.values()
    found = [o for e in entries if e.group == name for o in e.outputs]
    if not found:
        known = sorted({e.group for e in entries if e.group})
        raise UnknownNameError(f"no versions.toml entry has group = {name!r}; groups: {', '.join(known) or 'none'}")
    return found


def all_binaries() -> list[str]:
    """Return every pinned executable name a plain ``ensure`` builds, in build order (sandbox binaries first, then
    pulumi and the rest); entries of an on-demand ``group`` (:func:`group`) are left out."""
    order = [
        "etcd",
        "kubernetes",
        "kwok",
        "kueue",
        "jobset",
        "trainer",
        "pulumi",
        "pulumi-resource-kubernetes",
        "actionlint",
    ]
    entries = _versions().entries
    names = [n for n in order if n in entries] + [n for n in entries if n not in order and entries[n].group is None]
    return [o for n in names for o in entries[n].outputs]


@functools.cache
def _pulumi_on_path() -> Path | None:
    """A ``pulumi`` on PATH whose ``pulumi version`` is exactly the pinned one (a user's install), else None."""
    found = shutil.which("pulumi")
    if not found:
        return None
    want = "v" + _versions().entries["pulumi"].version
    try:
        out = subprocess.run([found, "version"], capture_output=True, text=True, timeout=30,
                             env={**__import__("os").environ, "PULUMI_SKIP_UPDATE_CHECK": "true"}).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(found) if out == want else None


def binary(name: str) -> Path:
    """Return the executable ``name`` (e.g. "kube-apiserver") of its pinned version, without building anything.

    ``pulumi``: the cached build, else a ``pulumi`` on PATH that reports exactly the pinned version.
    ``pulumi-resource-kubernetes``: the copy installed in the toolchain's PULUMI_HOME plugin cache.
    Raises ToolchainError naming the command that builds it if it is missing.
    """
    entry = _versions().entry_for(name)
    if entry.plugin is not None:
        path = plugins.plugin_path(entry.plugin.kind, entry.plugin.name, entry.plugin.version)
    else:
        path = paths.bin_path(name, entry.version)
    if path.is_file():
        return path
    if name == "pulumi" and (ambient := _pulumi_on_path()) is not None:
        return ambient
    raise ToolchainError(f"{name} {entry.version} is not built yet; run `python -m kueue_cohorts.toolchain ensure "
                         f"{name}`")


def analyzer_shim() -> Path:
    """Return the installed ``pulumi-analyzer-policy-python`` shim in the plugin cache (installed by ensure)."""
    spec = _versions().plugins["analyzer-policy-python"]
    return plugins.plugin_path("analyzer", "policy-python", spec["version"])


def _install_analyzer_shim() -> Path:
    spec = _versions().plugins["analyzer-policy-python"]
    return plugins.install("analyzer", "policy-python", spec["version"], paths.repo_root() / spec["source"])


@contextlib.contextmanager
def _build_lock(entry: versions.Entry) -> Iterator[None]:
    """Hold an exclusive lock per entry and version (fcntl.flock on a file in the cache) while it is built."""
    lock_dir = cache_root() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{entry.name}-{entry.version}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _ensure_entry(entry: versions.Entry) -> None:
    if entry.name == "pulumi" and _pulumi_on_path() is not None:
        print(f"[toolchain] pulumi {entry.version}: using {_pulumi_on_path()} from PATH", flush=True)
        return
    if entry.plugin is not None:
        target = plugins.plugin_path(entry.plugin.kind, entry.plugin.name, entry.plugin.version)
        if target.is_file():
            print(f"[toolchain] {entry.name} {entry.version}: plugin cached", flush=True)
            return
        theirs = plugins.user_installed(entry.plugin.kind, entry.plugin.name, entry.plugin.version)
        if theirs is not None:
            plugins.install(entry.plugin.kind, entry.plugin.name, entry.plugin.version, theirs)
            return
    with _build_lock(entry):  # another process (a test, a second make) may be building the same entry right now
        if build.outputs_present(entry):
            print(f"[toolchain] {entry.name} {entry.version}: cached", flush=True)
        elif not archives.install(entry, _versions().archives.get(entry.name)):
            build.build(entry)
    if entry.plugin is not None:
        plugins.install(entry.plugin.kind, entry.plugin.name, entry.plugin.version,
                        paths.bin_path(entry.outputs[0], entry.version))


def _from_archive(entry: versions.Entry) -> bool:
    """Whether ``entry`` is now installed without a Go build: cached already, or from its official archive (under
    its build lock). False: it has no usable archive, and the caller builds it."""
    with _build_lock(entry):
        if build.outputs_present(entry):
            return True
        return archives.install(entry, _versions().archives.get(entry.name))


def ensure(names: Iterable[str] | None = None) -> dict[str, Path]:
    """Install every missing pinned binary among ``names`` (executable names; None = all); return name -> path.

    An entry with a usable official archive (``toolchain/archives.py``: pinned SHA-256, reachable) is taken from
    it; every other entry is built from its Go module, one at a time (each go build is niced and already uses every
    core). The archives download in background threads while the Go builds run, and an entry whose archive fails
    joins the Go builds after them. Progress and seconds per step are printed.
    Also installs the policy-pack analyzer shim into the plugin cache. A warm cache returns in well under a
    second per binary. Raises ToolchainError for an unknown name or a failed build.
    """
    start = time.monotonic()
    wanted = list(names) if names else all_binaries()
    entries: list[versions.Entry] = []
    for name in wanted:
        entry = _versions().entry_for(name)
        if entry not in entries:
            entries.append(entry)
    downloads = [e for e in entries if e.name in _versions().archives and not
                 (e.name == "pulumi" and _pulumi_on_path() is not None)]
    with ThreadPoolExecutor(max_workers=max(1, len(downloads)), thread_name_prefix="toolchain-archive") as pool:
        started: dict[str, Future[bool]] = {e.name: pool.submit(_from_archive, e) for e in downloads}
        for entry in entries:
            if entry.name not in started:
                _ensure_entry(entry)
        for entry in downloads:
            if not started[entry.name].result():
                _ensure_entry(entry)  # the archive was refused: its Go build, after the others
            elif entry.plugin is not None:
                plugins.install(entry.plugin.kind, entry.plugin.name, entry.plugin.version,
                                paths.bin_path(entry.outputs[0], entry.version))
    _install_analyzer_shim()
    result = {name: binary(name) for name in wanted}
    print(f"[toolchain] ready in {time.monotonic() - start:.1f} s", flush=True)
    return result


def for_stack(path: Path) -> list[str]:
    """The executables ``up`` and ``preview`` of the stack file ``path`` need: ``ENGINE``, plus ``SANDBOX`` when its
    ``kueue-cohorts:cluster.mode`` is sandbox (the default), or cannot be read here (a ``secure:`` value: the
    sandbox's own ``up --only-if-sandbox`` decides then). Reads the YAML only (no settings check: ``up`` runs that).
    Raises OSError or yaml.YAMLError for a file that cannot be read."""
    doc = yaml.safe_load(Path(path).read_text()) or {}
    config = doc.get("config") if isinstance(doc, dict) else None
    cluster = config.get("kueue-cohorts:cluster") if isinstance(config, dict) else None
    mode = cluster.get("mode", "sandbox") if isinstance(cluster, dict) else "sandbox"
    return [*ENGINE, *SANDBOX] if mode not in ("kubeconfig", "render") else list(ENGINE)


def module_dir(module: str, version: str) -> Path:
    """Return the read-only module-cache directory of ``module@version`` (``go mod download -json`` Dir)."""
    return gocmd.module_dir(module, version)


def crd_files(name: str) -> list[Path]:
    """Return the CRD YAML files of versions.toml ``[crds.<name>]`` (kueue, jobset, trainer, kserve), sorted.

    Directories contribute their ``*.yaml`` files (not recursive); file paths are returned as is.
    Raises ToolchainError for an unknown name or a path missing from the module.
    """
    try:
        src = _versions().crds[name]
    except KeyError:
        raise ToolchainError(
            f"unknown CRD source {name!r}; versions.toml [crds] has {sorted(_versions().crds)}") from None
    root = module_dir(src.module, src.version)
    files: list[Path] = []
    for rel in src.paths:
        p = root / rel
        if p.is_dir():
            files += sorted(p.glob("*.yaml"))
        elif p.is_file():
            files.append(p)
        else:
            raise ToolchainError(f"{src.module}@{src.version} has no {rel}")
    return files


def crd_documents(name: str) -> list[dict[str, Any]]:
    """Return the CustomResourceDefinition documents of :func:`crd_files` ``(name)``, parsed, in file order.

    Parsing the Trainer's and KServe's 2 MB of YAML takes seconds on a busy machine, and the files in the module
    cache never change for a pinned version, so the parsed documents are kept as JSON in
    ``<cache>/crds/<name>-<sha256 of module, version and paths>.json`` (written atomically) and read from there
    afterwards (milliseconds). Raises ToolchainError as crd_files does.
    """

    src = _versions().crds[name] if name in _versions().crds else None
    files = crd_files(name)
    key = hashlib.sha256(json.dumps([src.module, src.version, list(src.paths)] if src else [name]).encode())
    cached = cache_root() / "crds" / f"{name}-{key.hexdigest()[:16]}.json"
    if cached.is_file():
        cached_docs: list[dict[str, Any]] = json.loads(cached.read_text())
        return cached_docs
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [doc for path in files for doc in yaml.load_all(path.read_text(), Loader=loader)
            if doc and doc.get("kind") == "CustomResourceDefinition"]
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(docs))
    os.replace(tmp, cached)
    return docs


def chart_dir(name: str) -> Path:
    """Return the chart directory of versions.toml ``[charts.<name>]`` inside its Go module (read-only).

    Raises ToolchainError for an unknown name or a missing Chart.yaml.
    """
    try:
        spec = _versions().charts[name]
    except KeyError:
        raise ToolchainError(
            f"unknown chart {name!r}; versions.toml [charts] has {sorted(_versions().charts)}") from None
    path = module_dir(spec["module"], spec["module_version"]) / spec["path"]
    if not (path / "Chart.yaml").is_file():
        raise ToolchainError(f"{spec['module']}@{spec['module_version']} has no chart at {spec['path']}")
    return path
