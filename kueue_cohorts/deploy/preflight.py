"""Cluster preflight of a ``kubeconfig``-mode stack, before any engine call: file, context, API server answering.

Without it, a missing context surfaces as about 180 lines of engine output ending in a gRPC traceback ("resource
monitor shut down"), with the provider's ``context "prod" does not exist`` buried in the middle. The checks use the
official kubernetes client (the same kubeconfig loading rules as the provider: ``cluster.kubeconfig``, else
``$KUBECONFIG`` (a list of files, merged), else ``~/.kube/config``; ``cluster.context``, else the current context).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kubernetes import client, config

from kueue_cohorts.components.settings.quoting import shell_word
from kueue_cohorts.deploy.stackfile import KUBECONFIG_MODE, StackTarget

DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclass(frozen=True)
class PreflightFailure:
    """Why the cluster cannot be used. ``line``: one line naming the context, the file and the fix.
    ``usage``: True for a configuration problem (file or context missing, exit 2), False for an API server
    that does not answer (exit 1)."""

    line: str
    usage: bool


def kubeconfig_files(target: StackTarget, environ: Mapping[str, str]) -> list[Path]:
    """Return the kubeconfig files the provider would read for ``target`` (in order; they may not exist).

    ``cluster.kubeconfig`` (relative to the current directory, ``~`` expanded) wins; else every entry of
    ``$KUBECONFIG`` (``os.pathsep``-separated, as kubectl merges them); else ``~/.kube/config``.
    """
    if target.kubeconfig:
        return [Path(target.kubeconfig).expanduser()]
    env = environ.get("KUBECONFIG") or ""
    entries = [e for e in env.split(os.pathsep) if e]
    return [Path(e).expanduser() for e in entries] if entries else [Path(DEFAULT_KUBECONFIG).expanduser()]


def check(target: StackTarget, environ: Mapping[str, str], timeout_seconds: float = 10.0) -> Optional[PreflightFailure]:
    """Check that ``target`` (a kubeconfig-mode stack) can reach its cluster; None when it can or is not one.

    Checks, in order: a kubeconfig file exists; the context (``cluster.context``, else the file's current context)
    exists in it; the API server answers ``GET /version`` within ``timeout_seconds`` with those credentials.
    A secret ``cluster.kubeconfig`` / ``cluster.context`` cannot be read without the engine: the check is skipped.
    Returns a PreflightFailure whose ``line`` names the context, the file and the fix.
    """
    if target.mode != KUBECONFIG_MODE or any(k.endswith((".kubeconfig", ".context")) for k in target.secret_keys):
        return None

    files = kubeconfig_files(target, environ)
    shown = os.pathsep.join(str(f) for f in files)
    existing = [f for f in files if f.is_file()]
    wanted = f'context "{target.context}"' if target.context else "the current context"
    key_hint = "kueue-cohorts:cluster.kubeconfig" if target.kubeconfig else "KUBECONFIG"
    if not existing:
        return PreflightFailure(
            f"stack {target.name!r}: kubeconfig {shown} does not exist (needed for {wanted}). Fix: write the "
            f"cluster's kubeconfig there, or point {key_hint} at it", usage=True)
    config_file = os.pathsep.join(str(f) for f in existing)
    try:
        contexts, current = config.list_kube_config_contexts(config_file=config_file)
    except Exception as err:  # noqa: BLE001 - any parse failure of the user's file is a config problem
        return PreflightFailure(
            f"stack {target.name!r}: kubeconfig {config_file} cannot be read for {wanted} ({_one_line(err)}). "
            f"Fix: repair the file or point {key_hint} at a valid kubeconfig", usage=True)
    names = sorted(c["name"] for c in contexts or [])
    context = target.context or (current or {}).get("name")
    if not context or context not in names:
        have = f"it has {', '.join(names)}" if names else "it has no contexts"
        fix = (f"add the context (kubectl --kubeconfig {shell_word(config_file)} config set-context "
               f"{shell_word(target.context or '')} ...) or set "
               f"kueue-cohorts:cluster.context to one of its contexts" if target.context
               else "set kueue-cohorts:cluster.context or the file's current-context")
        return PreflightFailure(
            f"stack {target.name!r}: {wanted} does not exist in kubeconfig {config_file} ({have}). Fix: {fix}",
            usage=True)
    try:
        api = config.new_client_from_config(config_file=config_file, context=context)
        client.VersionApi(api).get_code(_request_timeout=timeout_seconds)
    except Exception as err:  # noqa: BLE001 - unreachable, refused, TLS, 401/403: the API server did not answer us
        server = _server_of(config_file, context)
        return PreflightFailure(
            f"stack {target.name!r}: the API server of context \"{context}\" in kubeconfig {config_file}"
            f"{f' ({server})' if server else ''} did not answer GET /version within {timeout_seconds:g} s: "
            f"{_one_line(err)}. Fix: check the network, VPN or credentials of that context, or the context itself",
            usage=False)
    return None


def _server_of(config_file: str, context: str) -> Optional[str]:
    """The ``server`` URL of ``context``'s cluster in ``config_file`` (None if it cannot be read)."""

    try:
        loader = config.kube_config.KubeConfigLoader(
            config_dict=config.kube_config.KubeConfigMerger(config_file).config, active_context=context)
        cluster = loader._cluster  # noqa: SLF001 - the loader exposes the cluster only this way
        server = cluster["server"] if cluster is not None else None
        return server if isinstance(server, str) else None
    except Exception:  # noqa: BLE001 - best effort, for the message only
        return None


def _one_line(err: BaseException) -> str:
    """``err`` in one line: ``<status> <reason>`` for an API answer, else its first non-empty line."""
    status, reason = getattr(err, "status", None), getattr(err, "reason", None)
    if status:
        return f"HTTP {status} {reason or ''}".strip()
    text = str(err).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return type(err).__name__
