"""Which cluster a stack means: ``kueue-cohorts:cluster`` of ``stacks/Pulumi.<stack>.yaml``, read the way the program
reads it (``components.settings.raw_from_stack_file`` + ``load_settings``).

sandbox mode: the sandbox's admin kubeconfig (``sandbox.paths.kubeconfig_path()``, which follows
``$KUEUE_COHORTS_SANDBOX_DIR``); kubeconfig mode: ``cluster.kubeconfig`` (default: the client's ``$KUBECONFIG`` or
``~/.kube/config``) and ``cluster.context`` (default: the current context); render mode has no cluster.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml
from kubernetes import client as k8s
from kubernetes import config as kconfig
from kubernetes.config.config_exception import ConfigException

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.assembly import AssembledStack, assemble
from kueue_cohorts.components.model.render import RenderedStack
from kueue_cohorts.components.settings import ClusterMode, MultiKueueWorker, Settings, raw_from_stack_file
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.stackfile import StackFileError
from kueue_cohorts.sandbox.paths import SandboxPaths, kubeconfig_path


class TargetError(Exception):
    """The stack cannot be read or names no usable cluster: a usage/config error (exit 2), one message."""


def load_stack(path: Path) -> Settings:
    """Read and validate a stack file.

    Args:
        path: a stack file (``stacks/Pulumi.<stack>.yaml``).
    Returns:
        The stack's validated Settings.
    Raises:
        TargetError: the file is missing or not YAML, or its config is invalid (the message lists every problem).
    """
    return _validated(path)[0]


def load_assembled(path: Path) -> tuple[Settings, AssembledStack]:
    """``load_stack``, and the stack assembled from the settings check's own render
    (``components.checks.validation.Validation.rendered``): the stack is rendered once per run. Raises TargetError
    as ``load_stack``."""
    settings, rendered = _validated(path)
    return settings, assemble(settings, rendered=rendered)


def _validated(path: Path) -> tuple[Settings, Optional[RenderedStack]]:
    if not path.is_file():
        raise TargetError(f"no stack file {path} (stacks/Pulumi.<stack>.yaml)")
    try:
        result = validate(raw_from_stack_file(path))
        if result.problems or result.settings is None:
            raise SettingsError(result.problems)
    except StackFileError as err:
        raise TargetError(str(err)) from None
    except SettingsError as err:
        raise TargetError(f"{path}: {err}") from None
    return result.settings, result.rendered


@dataclass(frozen=True)
class Target:
    """The cluster of a stack: ``mode`` (sandbox | kubeconfig), ``kubeconfig`` (None: the client's default) and
    ``context`` (None: the current context)."""

    mode: str
    kubeconfig: Optional[Path]
    context: Optional[str]

    def describe(self) -> str:
        """One line for humans: ``sandbox (/home/u/.local/state/kueue-cohorts/sandbox/kubeconfig)`` or
        ``kubeconfig $KUBECONFIG or ~/.kube/config, context prod``."""
        if self.mode == ClusterMode.SANDBOX.value:
            return f"sandbox ({self.kubeconfig})"
        where = str(self.kubeconfig) if self.kubeconfig else "$KUBECONFIG or ~/.kube/config"
        return f"kubeconfig {where}" + (f", context {self.context}" if self.context else "")

    def api_client(self) -> k8s.ApiClient:
        """Return a kubernetes ApiClient for this cluster. Raises TargetError when the kubeconfig is missing or
        unusable (e.g. the sandbox is not running, or the context does not exist)."""
        if self.kubeconfig is not None and not self.kubeconfig.is_file():
            hint = " (is the sandbox up? `kueue-cohorts sandbox up`)" if self.mode == ClusterMode.SANDBOX.value else ""
            raise TargetError(f"kubeconfig {self.kubeconfig} does not exist{hint}")
        try:
            api: k8s.ApiClient = kconfig.new_client_from_config(
                config_file=str(self.kubeconfig) if self.kubeconfig else None, context=self.context)
            return api
        except (ConfigException, OSError, yaml.YAMLError) as err:
            raise TargetError(f"cannot use {self.describe()}: {err}") from None


def target_of(settings: Settings) -> Target:
    """The cluster ``settings.cluster`` names.

    Raises:
        TargetError: render mode (manifests in a directory, no cluster to look at).
    """
    cluster = settings.cluster
    if cluster.mode == ClusterMode.RENDER:
        raise TargetError(f"the stack renders manifests to {cluster.render_dir} (cluster.mode render): there is no "
                          "cluster to look at; point it at one (cluster.mode kubeconfig or sandbox)")
    if cluster.mode == ClusterMode.SANDBOX:
        return Target(ClusterMode.SANDBOX.value, kubeconfig_path(), None)
    path = Path(cluster.kubeconfig).expanduser() if cluster.kubeconfig else None
    return Target(ClusterMode.KUBECONFIG.value, path, cluster.context)


def worker_target(settings: Settings, worker: MultiKueueWorker) -> Target:
    """The cluster of MultiKueue worker `worker`: in sandbox mode the worker sandbox's admin kubeconfig
    (``<state dir>/workers/<name>/kubeconfig``), in kubeconfig mode the worker's ``kubeconfig`` and ``context``.

    Raises:
        TargetError: render mode (no cluster).
    """
    cluster = settings.cluster
    if cluster.mode == ClusterMode.RENDER:
        raise TargetError(f"the stack renders manifests to {cluster.render_dir} (cluster.mode render): there is no "
                          f"worker cluster {worker.name} to look at")
    if cluster.mode == ClusterMode.SANDBOX:
        return Target(ClusterMode.SANDBOX.value, SandboxPaths.default().worker(worker.name).kubeconfig, None)
    path = Path(worker.kubeconfig).expanduser() if worker.kubeconfig else None
    return Target(ClusterMode.KUBECONFIG.value, path, worker.context)
