"""Preflight: before any Kueue object is created, make sure the target cluster serves Kueue's API."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from kubernetes import client, config  # the official client: discovery of API groups

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
MINIMUM_KUEUE = "0.16"


class PreflightError(RuntimeError):
    """The cluster cannot take this stack as configured; the message says what to install or change."""


def require_kueue_api(kubeconfig: Optional[Path], context: Optional[str], pinned_kueue: str,
                      timeout_seconds: float = 15.0) -> None:
    """Check that the cluster serves kueue.x-k8s.io/v1beta2 (Kueue >= 0.16, where it is the storage version).

    Args:
        kubeconfig: kubeconfig file (None: the client's default). context: kubeconfig context (None: current).
        pinned_kueue: the Kueue version this project pins (toolchain/versions.toml), named in the message.
        timeout_seconds: API discovery timeout.
    Raises:
        PreflightError: the cluster is unreachable, or does not serve kueue.x-k8s.io/v1beta2.
    """
    try:
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]  # the kubernetes client is untyped
            config_file=str(kubeconfig) if kubeconfig else None, context=context)
        groups = client.ApisApi(api).get_api_versions(_request_timeout=timeout_seconds).groups
    except Exception as err:  # noqa: BLE001 - any failure here means we cannot check the cluster
        raise PreflightError(
            f"Cannot read the API groups of the cluster (kubeconfig {kubeconfig or 'default'}, context "
            f"{context or 'current'}): {err}. Check the kubeconfig, or use cluster mode render to work offline."
        ) from None
    served = sorted(v.version for g in groups if g.name == KUEUE_GROUP for v in g.versions)
    if KUEUE_VERSION not in served:
        have = f"it serves {KUEUE_GROUP} {', '.join(served)}" if served else "it has no Kueue API"
        raise PreflightError(
            f"The cluster does not serve {KUEUE_GROUP}/{KUEUE_VERSION} ({have}). Install Kueue {MINIMUM_KUEUE} "
            "or newer "
            f"({KUEUE_VERSION} is the storage version since {MINIMUM_KUEUE}; this project pins {pinned_kueue}), or set "
            "kueue-cohorts:kueue.install: true to install it with this stack."
        )
