"""Typed view of toolchain/versions.toml, the one file that pins every binary and the matching PyPI versions."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.toml"


class ToolchainError(RuntimeError):
    """Raised when a pinned binary, module or file is missing or cannot be built; the message says which and why."""


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
    wrapper go.mod requires.
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


@dataclass(frozen=True)
class CrdSource:
    """A ``[crds]`` entry: files at ``paths`` (dirs or files) inside Go module ``module`` at ``version``."""

    name: str
    module: str
    version: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Versions:
    """All of versions.toml: PyPI pins (name -> version), build entries, plugins, CRD and chart sources."""

    pypi: dict[str, str]
    entries: dict[str, Entry]
    plugins: dict[str, dict[str, str]]
    crds: dict[str, CrdSource]
    charts: dict[str, dict[str, str]]
    raw: dict[str, Any]

    def entry_for(self, binary: str) -> Entry:
        """Return the entry that builds executable ``binary`` (e.g. kube-scheduler -> kubernetes).

        Raises ToolchainError for an unknown name, listing the known ones.
        """
        for entry in self.entries.values():
            if binary in entry.outputs:
                return entry
        known = sorted(o for e in self.entries.values() for o in e.outputs)
        raise ToolchainError(f"unknown binary {binary!r}; versions.toml pins: {', '.join(known)}")


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
    )


def load(path: Path = VERSIONS_FILE) -> Versions:
    """Parse versions.toml at ``path`` into a Versions; raises ToolchainError on a malformed entry."""
    raw = tomllib.loads(path.read_text())
    return Versions(
        pypi=dict(raw.get("pypi", {})),
        entries={name: _entry(name, spec) for name, spec in raw.get("binaries", {}).items()},
        plugins=dict(raw.get("plugins", {})),
        crds={
            name: CrdSource(name, spec["module"], spec["version"], tuple(spec["paths"]))
            for name, spec in raw.get("crds", {}).items()
        },
        charts=dict(raw.get("charts", {})),
        raw=raw,
    )
