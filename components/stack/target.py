"""Where the stack goes, resolved once at the top (`__main__.py`), so that nothing below reads the environment.

Takes validated Settings and returns a `Target`: the kubeconfig path (the sandbox's in sandbox mode), the Kueue chart
reference when the stack installs Kueue (published OCI chart, or the chart directory of the pinned Go module), the
sandbox's out-of-cluster Kueue manager endpoint, and it runs the preflight: the cluster serves
kueue.x-k8s.io/v1beta2 (when the stack relies on an existing Kueue), and the stack adopts no namespace it did not
create (components/stack/preflight.py `check_namespaces`). Render mode has no cluster: no preflight.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import toolchain
from components.resources.kueue_install import ChartReference, OutOfClusterManager
from components.settings import ChartSource, ClusterMode, Settings
from components.stack.preflight import check_namespaces, require_admittable_trainer, require_kueue_api


@dataclass(frozen=True)
class SandboxTarget:
    """The local sandbox as `__main__.py` finds it (sandbox.paths / sandbox.endpoints), passed down so that no
    layer of `components` imports the sandbox tool: `kubeconfig` (its admin kubeconfig file) and `manager` (a
    callable returning (base URL, CA PEM bytes) of its out-of-cluster Kueue webhook server; called only when the
    stack installs Kueue into the sandbox, and raising FileNotFoundError / KeyError when the sandbox is not up)."""

    kubeconfig: Path
    manager: Callable[[], tuple[str, bytes]]


@dataclass(frozen=True)
class Target:
    """What the provider and the Kueue installation need: `kubeconfig` (None: the client's default), `chart`
    (None unless kueue.install), `manager` (the sandbox's out-of-cluster Kueue manager, sandbox + install only);
    `warnings`: the preflight's advisory lines (namespaces this stack created that it no longer declares)."""

    kubeconfig: Optional[Path]
    chart: Optional[ChartReference]
    manager: Optional[OutOfClusterManager]
    warnings: tuple[str, ...] = ()


def kueue_chart(source: ChartSource) -> ChartReference:
    """The pinned Kueue chart: the published OCI reference, or the chart directory in the Kueue Go module (offline).
    Versions from toolchain/versions.toml."""
    if source == ChartSource.GO_MODULE:
        return ChartReference(chart=str(toolchain.chart_dir("kueue")))
    pinned = toolchain.versions.load().charts["kueue"]
    return ChartReference(chart=pinned["repo"], version=pinned["version"])


def resolve(settings: Settings, namespace_owner: str, sandbox: SandboxTarget) -> Target:
    """Resolve the target of `settings` and run the preflight.

    Args:
        settings: validated Settings. namespace_owner: this stack's ownership mark
            (`components.model.kueue.namespace_owner(project, stack)`). sandbox: where the local sandbox is (used
            in sandbox mode only).
    Raises:
        PreflightError: the cluster does not serve Kueue's v1beta2 API (and the stack does not install Kueue), its
            Kubeflow Trainer is one the pinned Kueue cannot admit TrainJobs of (`trainer-not-admittable`), or its
            Namespaces or CRDs cannot be read.
        NamespacePreflightError: a namespace the stack must not adopt or delete (every one listed at once).
        OSError: the sandbox's state cannot be read (sandbox mode with kueue.install).
    """
    cluster = settings.cluster
    kubeconfig = Path(cluster.kubeconfig).expanduser() if cluster.kubeconfig else None
    if cluster.mode == ClusterMode.SANDBOX:
        kubeconfig = sandbox.kubeconfig
    chart = kueue_chart(settings.kueue.chart_source) if settings.kueue.install else None
    manager = None
    if settings.kueue.install and cluster.mode == ClusterMode.SANDBOX:
        manager = OutOfClusterManager(*sandbox.manager())
    if cluster.mode == ClusterMode.RENDER:
        return Target(kubeconfig, chart, manager)
    pins = toolchain.versions.load().entries
    if not settings.kueue.install:
        require_kueue_api(kubeconfig, cluster.context, pins["kueue"].version)
    if settings.training_runtime is not None:  # the stack runs TrainJobs: the Trainer must be one Kueue can admit
        require_admittable_trainer(kubeconfig, cluster.context, pins["kueue"].version, pins["trainer"].version)
    warnings = check_namespaces(settings, namespace_owner, kubeconfig, cluster.context)
    return Target(kubeconfig, chart, manager, tuple(warnings))
