"""Where the stack goes, resolved once at the top (`__main__.py`), so that nothing below reads the environment.

Takes validated Settings and returns a `Target`: the kubeconfig path (the sandbox's in sandbox mode), the Kueue chart
reference when the stack installs Kueue (published OCI chart, or the chart directory of the pinned Go module), the
sandbox's out-of-cluster Kueue manager endpoint, and it runs the preflight: the cluster serves
kueue.x-k8s.io/v1beta2 (when the stack relies on an existing Kueue), and the stack adopts no namespace it did not
create (components/stack/preflight.py `check_namespaces`). Render mode has no cluster: no preflight.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.multikueue_rules import kubeconfig_problems
from kueue_cohorts.components.model.multikueue import worker_settings, writes_secret
from kueue_cohorts.components.model.render import RenderedStack
from kueue_cohorts.components.resources.kueue_install import (
    ChartReference,
    ClusterAccess,
    OutOfClusterManager,
    WebhookReadiness,
)
from kueue_cohorts.components.settings import (
    ChartSource,
    ClusterMode,
    ManagerTrainer,
    MultiKueueWorker,
    Settings,
    config_key,
)
from kueue_cohorts.components.stack.preflight import (
    PreflightError,
    check_namespaces,
    check_worker_account,
    require_admittable_trainer,
    require_crds_only_trainer,
    require_kueue_api,
)


@dataclass(frozen=True)
class SandboxTarget:
    """The local sandbox as `__main__.py` finds it (sandbox.paths / sandbox.endpoints), passed down so that no
    layer of `components` imports the sandbox tool: `kubeconfig` (its admin kubeconfig file) and `manager` (a
    callable returning (base URL, CA PEM bytes) of its out-of-cluster Kueue webhook server; called only when the
    stack installs Kueue into the sandbox, and raising FileNotFoundError / KeyError when the sandbox is not up)."""

    kubeconfig: Path
    manager: Callable[[], tuple[str, bytes]]
    worker: Optional[Callable[[str], tuple[Path, Path]]] = None
    """MultiKueue worker name -> (its worker sandbox's admin kubeconfig, the kubeconfig the manager's Kueue uses
    there); raises FileNotFoundError when that worker sandbox is not up (`kueue-cohorts sandbox up --workers N`)."""


@dataclass(frozen=True)
class WorkerTarget:
    """Where a MultiKueue worker is: `kubeconfig` for the deploy's provider (None: the client's default) and
    `kubeconfig_text`, the kubeconfig the manager's Kueue reads from the Secret the stack writes (None when the
    stack writes none); a secret: the program hands it on only as a Pulumi secret."""

    kubeconfig: Optional[Path]
    kubeconfig_text: Optional[str] = field(default=None, repr=False)


@dataclass(frozen=True)
class Target:
    """What the provider and the Kueue installation need: `kubeconfig` (None: the client's default), `chart`
    (None unless kueue.install), `manager` (the sandbox's out-of-cluster Kueue manager, sandbox + install only);
    `warnings`: the preflight's advisory lines (namespaces this stack created that it no longer declares)."""

    kubeconfig: Optional[Path]
    chart: Optional[ChartReference]
    manager: Optional[OutOfClusterManager]
    warnings: tuple[str, ...] = ()
    workers: Mapping[str, WorkerTarget] = field(default_factory=dict)
    webhook_readiness: Optional[WebhookReadiness] = None
    """How `up` knows that the Kueue it installs answers before anything goes through its webhooks: on a kubeconfig
    cluster a server-side dry-run ResourceFlavor through the apiserver (`WebhookReadiness.through_apiserver`, with
    the stack's kubeconfig and context); None in sandbox mode (the out-of-cluster manager is probed itself), in
    render mode and when the stack does not install Kueue."""


def kueue_chart(source: ChartSource) -> ChartReference:
    """The pinned Kueue chart: the published OCI reference, or the chart directory in the Kueue Go module (offline).
    Versions from toolchain/versions.toml."""
    if source == ChartSource.GO_MODULE:
        return ChartReference(chart=str(toolchain.chart_dir("kueue")))
    pinned = toolchain.versions.load().charts["kueue"]
    return ChartReference(chart=pinned["repo"], version=pinned["version"])


def resolve(settings: Settings, namespace_owner: str, sandbox: SandboxTarget,
            rendered: Optional[RenderedStack] = None) -> Target:
    """Resolve the target of `settings` and run the preflight.

    Args:
        settings: validated Settings. namespace_owner: this stack's ownership mark
            (`components.model.kueue.namespace_owner(project, stack)`). sandbox: where the local sandbox is (used
            in sandbox mode only). rendered: the settings check's render (`Validation.rendered`), whose objects
            (and each MultiKueue worker's) the namespace preflight reads; default: rendered again there.
    Raises:
        PreflightError: the cluster does not serve Kueue's v1beta2 API (and the stack does not install Kueue), its
            Kubeflow Trainer is one the pinned Kueue cannot admit TrainJobs of (`trainer-not-admittable`), a
            `multiKueue.managerTrainer: CRDsOnly` manager has the Trainer's webhooks (`manager-trainer-not-crds-only`),
            or its Namespaces, CRDs or webhook configurations cannot be read.
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
    workers = {w.name: _worker_target(settings, index, w, sandbox)
               for index, w in enumerate(settings.multi_kueue.workers if settings.multi_kueue else [])}
    if cluster.mode == ClusterMode.RENDER:
        return Target(kubeconfig, chart, manager, (), workers)
    readiness = None
    if settings.kueue.install and cluster.mode == ClusterMode.KUBECONFIG:
        readiness = WebhookReadiness.through_apiserver(
            ClusterAccess(str(kubeconfig) if kubeconfig else None, cluster.context))
    pins = toolchain.versions.load().entries
    if not settings.kueue.install:
        require_kueue_api(kubeconfig, cluster.context, pins["kueue"].version)
    if settings.training_runtime is not None:  # the stack runs TrainJobs: the Trainer must be one Kueue can admit
        require_admittable_trainer(kubeconfig, cluster.context, pins["kueue"].version, pins["trainer"].version)
    mk = settings.multi_kueue
    if mk is not None and mk.manager_trainer == ManagerTrainer.CRDS_ONLY:
        require_crds_only_trainer(kubeconfig, cluster.context,
                                  config_key("kueue-cohorts:multiKueue", "managerTrainer"))
    warnings = check_namespaces(settings, namespace_owner, kubeconfig, cluster.context, rendered)
    for index, worker in enumerate(mk.workers if mk else []):  # each worker runs its own Kueue
        where, context = workers[worker.name].kubeconfig, worker.context
        require_kueue_api(where, context, pins["kueue"].version)
        if settings.training_runtime is not None:
            require_admittable_trainer(where, context, pins["kueue"].version, pins["trainer"].version)
        warnings += [f"worker {worker.name}: {line}" for line in
                     check_namespaces(worker_settings(settings, worker), namespace_owner, where, context,
                                      rendered.workers[index].stack if rendered else None)]
        check_worker_account(settings, index, worker, namespace_owner, where, context)
    return Target(kubeconfig, chart, manager, tuple(warnings), workers, readiness)


def _worker_target(settings: Settings, index: int, worker: MultiKueueWorker, sandbox: SandboxTarget) -> WorkerTarget:
    """Where worker `worker` (`multiKueue.workers[index]`) is and, when the stack writes its Secret, the kubeconfig
    the manager's Kueue will read: the worker sandbox's (sandbox mode) or `secret.fromFile` (kubeconfig mode), read
    now and checked as Kueue checks it.

    Raises:
        PreflightError: the worker sandbox is not up; the file cannot be read; Kueue would refuse the kubeconfig
            (every reason listed).
    """
    mode = settings.cluster.mode
    kubeconfig = Path(worker.kubeconfig).expanduser() if worker.kubeconfig else None
    secret_file: Optional[Path] = Path(worker.secret.from_file).expanduser() if worker.secret.from_file else None
    key = config_key("kueue-cohorts:multiKueue", "workers", index, "secret", "fromFile")
    if mode == ClusterMode.SANDBOX:
        try:
            if sandbox.worker is None:
                raise FileNotFoundError(worker.name)
            kubeconfig, secret_file = sandbox.worker(worker.name)
        except (FileNotFoundError, KeyError):
            count = len(settings.multi_kueue.workers) if settings.multi_kueue else index + 1
            raise PreflightError(f"the worker sandbox {worker.name} is not up: start it with `kueue-cohorts sandbox up "
                                 f"--workers {count}`") from None
        key = f"the worker sandbox's kubeconfig of {worker.name}"
    if not writes_secret(settings, worker) or secret_file is None:
        return WorkerTarget(kubeconfig)
    try:
        text = secret_file.read_text()
    except OSError as err:
        raise PreflightError(f"{key} = {str(secret_file)!r}: cannot be read ({err.strerror or err}). Fix: write the "
                             "worker's kubeconfig there (docs/multikueue.md), or remove fromFile and create the "
                             "Secret yourself.") from None
    problems = kubeconfig_problems(text)
    if problems:
        raise PreflightError(f"{key} = {str(secret_file)!r}: Kueue's MultiKueue would refuse this kubeconfig: "
                             + "; ".join(problems) + ". Fix: write a kubeconfig with certificate-authority-data and a "
                             "token or client certificate data (docs/multikueue.md).")
    return WorkerTarget(kubeconfig, text)
