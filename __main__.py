"""kueue-cohorts: the Pulumi program. Reads the stack config once, validates it, builds the cohort layouts.

Run through `make up` / `make preview` (python -m deploy, the real pulumi CLI with this file as an inline program)
or with `pulumi up` where a Python language host is installed. Nothing is registered if the config is invalid.
"""
import json
from pathlib import Path

import pulumi
from pulumi.runtime import config as runtime_config

from components.settings import PROJECT, ClusterMode, load_settings
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


settings = load_settings(_project_config())  # raises SettingsError listing every problem; nothing registered yet
sandbox_kubeconfig = None
if settings.cluster.mode == ClusterMode.SANDBOX:
    from sandbox.paths import kubeconfig_path

    sandbox_kubeconfig = kubeconfig_path()
outputs = build_stack(settings, kubernetes_provider(settings.cluster, ROOT, sandbox_kubeconfig))
for key, value in outputs.items():
    if not key.startswith("_"):
        pulumi.export(key, value)
