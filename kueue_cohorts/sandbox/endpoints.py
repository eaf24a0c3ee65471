"""Endpoints of a running sandbox that a Pulumi program needs (read from its state directory)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kueue_cohorts.sandbox.certs import Certificates
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.sandbox.state import State

LOOPBACK = "127.0.0.1"


def kueue_webhook_endpoint(environ: Mapping[str, str] | None = None) -> tuple[str, bytes]:
    """Return (base URL, CA PEM) of the sandbox's out-of-cluster Kueue webhook server, e.g.
    ("https://127.0.0.1:40123", b"-----BEGIN CERTIFICATE-----..."). Raises FileNotFoundError / KeyError when the
    sandbox has not been started (`python -m kueue_cohorts.sandbox up`)."""
    paths = SandboxPaths.default(environ)
    state = State.load(paths.state_file)
    port = state.ports["kueue-webhook"]
    return f"https://{LOOPBACK}:{port}", Certificates(paths.pki).ca_crt.read_bytes()


def worker_kubeconfigs(name: str, environ: Mapping[str, str] | None = None) -> tuple[Path, Path]:
    """Return (admin kubeconfig, MultiKueue kubeconfig) of the running worker sandbox ``name``
    (``python -m kueue_cohorts.sandbox up --workers N``): the deploy's provider uses the first, the manager's Kueue the
    second
    (the worker identity's client certificate, see ``sandbox.certs.worker_identity``). Raises FileNotFoundError when
    that worker sandbox has not been started."""
    paths = SandboxPaths.default(environ).worker(name)
    if not paths.kubeconfig.is_file() or not paths.multikueue_kubeconfig.is_file():
        raise FileNotFoundError(f"worker sandbox {name} at {paths.root}")
    return paths.kubeconfig, paths.multikueue_kubeconfig
