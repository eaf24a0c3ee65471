"""Where the toolchain keeps its results: one cache root outside the repo, keyed by version.

Layout under the cache root (``$KUEUE_COHORTS_CACHE`` or ``~/.cache/kueue-cohorts``)::

    build/<entry>-<version>/        throwaway wrapper Go module per versions.toml entry
    bin/<output>-<version>/<output> the built executable (plus build.json: how and how long)
    pulumi-home/                    PULUMI_HOME: plugin cache (provider 4.25.0, policy analyzer shim)
"""

from __future__ import annotations

import os
from pathlib import Path

from kueue_cohorts import PROJECT_ROOT


def cache_root() -> Path:
    """Return the cache root: ``$KUEUE_COHORTS_CACHE`` if set, else ``~/.cache/kueue-cohorts`` (not created)."""
    override = os.environ.get("KUEUE_COHORTS_CACHE")
    return Path(override).expanduser() if override else Path.home() / ".cache" / "kueue-cohorts"


def build_dir(entry: str, version: str) -> Path:
    """Return the wrapper-module directory of a versions.toml entry, e.g. ``build/kubernetes-1.36.3``."""
    return cache_root() / "build" / f"{entry}-{version}"


def bin_dir(output: str, version: str) -> Path:
    """Return the directory holding one built executable, e.g. ``bin/kube-apiserver-1.36.3``."""
    return cache_root() / "bin" / f"{output}-{version}"


def bin_path(output: str, version: str) -> Path:
    """Return the path of one built executable, e.g. ``bin/kube-apiserver-1.36.3/kube-apiserver``."""
    return bin_dir(output, version) / output


def pulumi_home() -> Path:
    """Return the PULUMI_HOME used by ``deploy`` and the tests: ``<cache root>/pulumi-home`` (plugin cache inside)."""
    return cache_root() / "pulumi-home"


def repo_root() -> Path:
    """Return the repository root (the directory holding Pulumi.yaml), derived from this file's location."""
    return PROJECT_ROOT
