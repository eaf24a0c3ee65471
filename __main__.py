"""kueue-cohorts: the Pulumi program. Reads the stack config once, validates it, builds the cohort layouts.

Run through `make up` / `make preview` (python -m deploy, the real pulumi CLI with this file as an inline program)
or with `pulumi up` where a Python language host is installed. Nothing is registered if the config is invalid.
"""
import json
from pathlib import Path

import pulumi
from pulumi.runtime import config as runtime_config

from components.kueue_install import ChartReference, OutOfClusterManager
from components.preflight import PreflightError, require_kueue_api
from components.errors import SettingsError
from components.settings import PROJECT, ChartSource, ClusterMode, load_settings
from components.stack import build_stack, kubernetes_provider

ROOT = Path(__file__).resolve().parent


def _project_config() -> dict:
    """Every `kueue-cohorts:<key>` of the stack, objects decoded from the engine's JSON strings."""
    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = {}
    for key, value in merged.items():
        if key.startswith(f"{PROJECT}:"):
            try:
                raw[key.split(":", 1)[1]] = json.loads(value)
            except (TypeError, ValueError):
                raw[key.split(":", 1)[1]] = value
    return raw


def _kueue_chart(source: ChartSource) -> ChartReference:
    """The pinned Kueue chart: published OCI reference, or the chart directory in the Kueue Go module (offline)."""
    import toolchain

    if source == ChartSource.GO_MODULE:
        return ChartReference(chart=str(toolchain.chart_dir("kueue")))
    pinned = toolchain.versions.load().charts["kueue"]
    return ChartReference(chart=pinned["repo"], version=pinned["version"])


try:
    settings = load_settings(_project_config())  # every problem at once; nothing is registered before this
except SettingsError as err:
    raise pulumi.RunError(str(err)) from None  # the message alone, no Python traceback
cluster = settings.cluster
kubeconfig = Path(cluster.kubeconfig).expanduser() if cluster.kubeconfig else None
if cluster.mode == ClusterMode.SANDBOX:
    from sandbox.paths import kubeconfig_path

    kubeconfig = kubeconfig_path()
chart = _kueue_chart(settings.kueue.chart_source) if settings.kueue.install else None
manager = None
if settings.kueue.install and cluster.mode == ClusterMode.SANDBOX:
    # The sandbox's Kueue manager runs out of cluster: the chart's webhooks must point at it.
    from sandbox.endpoints import kueue_webhook_endpoint

    manager = OutOfClusterManager(*kueue_webhook_endpoint())
if cluster.mode != ClusterMode.RENDER and not settings.kueue.install:
    import toolchain

    try:
        require_kueue_api(kubeconfig, cluster.context, toolchain.versions.load().entries["kueue"].version)
    except PreflightError as err:
        raise pulumi.RunError(str(err)) from None
outputs = build_stack(settings, kubernetes_provider(cluster, ROOT, kubeconfig), chart, manager)
for key, value in outputs.items():
    if not key.startswith("_"):
        pulumi.export(key, value)
