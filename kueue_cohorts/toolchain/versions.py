"""Typed view of toolchain/versions.toml, the one file that pins every binary and the matching PyPI versions."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.toml"


class ToolchainError(RuntimeError):
    """Raised when a pinned binary, module or file is missing or cannot be built; the message says which and why."""


class UnknownNameError(ToolchainError):
    """Raised for a binary or group name that versions.toml does not pin: the caller's mistake, not the machine's (the
    command line exits 2 for it, as for any usage error); the message lists the names there are."""


@dataclass(frozen=True)
class Plugin:
    """A Pulumi plugin to install into the plugin cache: ``kind`` (resource|analyzer), ``name``, exact ``version``."""

    kind: str
    name: str
    version: str


@dataclass(frozen=True)
class Entry:
    """One ``[binaries.<name>]`` entry of versions.toml: a Go module built into one or more executables.

    Fields mirror the TOML keys (see the comment at the top of versions.toml): ``outputs[i]`` is built from
    ``packages[i]``; ``version`` (no leading v) keys the cache directories; ``module_version`` is what the
    wrapper go.mod requires. ``cgo``: built with CGO_ENABLED=1 (runc's nsenter is C); ``group``: an on-demand
    group (``real-node``) left out of a plain ``toolchain ensure``; ``cflags``: the one package is a C file of the
    module, compiled with the host's ``gcc <cflags>`` (the pod sandbox's ``pause``), not a Go package; ``debs``:
    ``package=version`` Debian packages of C headers and static archives a cgo build links (runc: libseccomp-dev).
    """

    name: str
    version: str
    module: str
    module_version: str
    outputs: tuple[str, ...]
    packages: tuple[str, ...]
    ldflags: tuple[str, ...] = ()
    extra_require: tuple[str, ...] = ()
    replace_local_with: str | None = None
    copy_godebug: bool = False
    scratch_copy: bool = False
    generate_dir: str | None = None
    generate_env: dict[str, str] = field(default_factory=dict)
    plugin: Plugin | None = None
    align_with: tuple[str, str] | None = None
    copy_replaces: bool = False
    tags: tuple[str, ...] = ()
    cgo: bool = False
    group: str | None = None
    cflags: tuple[str, ...] | None = None
    debs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Archive:
    """An ``[archives.<entry>]`` of versions.toml: the official release archive of a ``[binaries.<entry>]``.

    ``url``: the upstream download URL (a gzip-compressed tar); ``sha256``: its pinned SHA-256 (64 lowercase hex
    digits) or None when no sum could be verified (then the archive is never used); ``platform``: the one
    ``<os>-<arch>`` it is built for (``linux-amd64``); ``members``: executable name -> path inside the archive, one
    per output of the entry. The entry is taken from the archive only when the download's SHA-256 equals
    ``sha256`` (``toolchain/archives.py``); otherwise it is built from its Go module.
    """

    name: str
    url: str
    sha256: str | None
    platform: str
    members: dict[str, str]

    @property
    def file_name(self) -> str:
        """The archive's file name, the last segment of ``url`` (what a mirror serves under its base URL)."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class CrdSource:
    """A ``[crds]`` entry: files at ``paths`` (dirs or files) inside Go module ``module`` at ``version``."""

    name: str
    module: str
    version: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Versions:
    """All of versions.toml: PyPI pins (name -> version), build entries, their official archives (entry name ->
    Archive), plugins, CRD and chart sources."""

    pypi: dict[str, str]
    entries: dict[str, Entry]
    archives: dict[str, Archive]
    plugins: dict[str, dict[str, str]]
    crds: dict[str, CrdSource]
    charts: dict[str, dict[str, str]]
    raw: dict[str, Any]

    def entry_for(self, binary: str) -> Entry:
        """Return the entry that builds executable ``binary`` (e.g. kube-scheduler -> kubernetes).

        Raises UnknownNameError (a ToolchainError) for an unknown name, listing the known ones.
        """
        for entry in self.entries.values():
            if binary in entry.outputs:
                return entry
        known = sorted(o for e in self.entries.values() for o in e.outputs)
        raise UnknownNameError(f"unknown binary {binary!r}; versions.toml pins: {', '.join(known)}")


def _entry(name: str, spec: dict[str, Any]) -> Entry:
    outputs = tuple(spec.get("outputs", [name]))
    packages = tuple(spec["packages"]) if "packages" in spec else (spec["package"],)
    if len(outputs) != len(packages):
        raise ToolchainError(f"versions.toml [binaries.{name}]: {len(outputs)} outputs but {len(packages)} packages")
    generate = spec.get("generate") or {}
    plugin = spec.get("plugin")
    return Entry(
        name=name,
        version=spec["version"],
        module=spec["module"],
        module_version=spec["module_version"],
        outputs=outputs,
        packages=packages,
        ldflags=tuple(spec.get("ldflags", ())),
        extra_require=tuple(spec.get("extra_require", ())),
        replace_local_with=spec.get("replace_local_with"),
        copy_godebug=bool(spec.get("copy_godebug", False)),
        scratch_copy=bool(spec.get("scratch_copy", False)),
        generate_dir=generate.get("dir"),
        generate_env=dict(generate.get("env", {})),
        plugin=Plugin(**plugin) if plugin else None,
        align_with=(spec["align_with"]["require"], spec["align_with"]["package"]) if "align_with" in spec else None,
        copy_replaces=bool(spec.get("copy_replaces", False)),
        tags=tuple(spec.get("tags", ())),
        cgo=bool(spec.get("cgo", False)),
        group=spec.get("group"),
        cflags=tuple(spec["cflags"]) if "cflags" in spec else None,
        debs=tuple(spec.get("debs", ())),
    )


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _archive(name: str, spec: dict[str, Any], entries: dict[str, Entry]) -> Archive:
    where = f"versions.toml [archives.{name}]"
    if name not in entries:
        raise ToolchainError(f"{where}: no [binaries.{name}] entry builds what it would replace")
    sha = spec.get("sha256")
    if sha is not None and not _SHA256.match(sha):
        raise ToolchainError(f"{where}: sha256 = {sha!r} is not 64 lowercase hex digits")
    members = dict(spec.get("members", {}))
    if set(members) != set(entries[name].outputs):
        raise ToolchainError(f"{where}: members name {sorted(members)}, the entry builds {list(entries[name].outputs)}")
    url = spec["url"]
    if not url.startswith("https://"):
        raise ToolchainError(f"{where}: url = {url!r} is not an https:// URL")
    return Archive(name=name, url=url, sha256=sha, platform=spec.get("platform", "linux-amd64"), members=members)


def load(path: Path = VERSIONS_FILE) -> Versions:
    """Parse versions.toml at ``path`` into a Versions; raises ToolchainError on a malformed entry."""
    raw = tomllib.loads(path.read_text())
    entries = {name: _entry(name, spec) for name, spec in raw.get("binaries", {}).items()}
    return Versions(
        pypi=dict(raw.get("pypi", {})),
        entries=entries,
        archives={name: _archive(name, spec, entries) for name, spec in raw.get("archives", {}).items()},
        plugins=dict(raw.get("plugins", {})),
        crds={
            name: CrdSource(name, spec["module"], spec["version"], tuple(spec["paths"]))
            for name, spec in raw.get("crds", {}).items()
        },
        charts=dict(raw.get("charts", {})),
        raw=raw,
    )
