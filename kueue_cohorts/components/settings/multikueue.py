"""`kueue-cohorts:multiKueue`: MultiKueue from the same stack. The cluster the stack targets (`cluster`) is the
manager: it queues the workloads of the dispatching ClusterQueues and hands each to the first worker cluster that
admits it. Every worker gets the stack's cohorts, LocalQueues, namespaces and training runtime, and the identity the
manager's Kueue uses there.

Upstream: kubernetes-sigs/kueue apis/kueue/v1beta2/multikueue_types.go (MultiKueueCluster, MultiKueueConfig; the
kubeconfig under key `kubeconfig` of a Secret in Kueue's namespace; at most 20 clusters per MultiKueueConfig, in the
order the Incremental dispatcher nominates them) and admissioncheck_types.go (controllerName
`kueue.x-k8s.io/multikueue`), v0.19.2.
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import SELECTS_CONTEXT, SELECTS_KUBECONFIG, DnsLabel, DnsSubdomain, Model
from kueue_cohorts.components.settings.cluster import NodePool

MAX_CLUSTERS = 20
"""MultiKueueConfig `spec.clusters` MaxItems (multikueue_types.go v0.19.2)."""

SERVICE_ACCOUNT = "multikueue"
"""Default name of the worker ServiceAccount the manager's Kueue acts as on a worker."""


class WorkerSecret(Model):
    """`multiKueue.workers[].secret`: the Secret in Kueue's namespace on the manager whose key `kubeconfig` holds the
    worker's kubeconfig (MultiKueueCluster `spec.clusterSource.kubeConfig` with locationType Secret)."""

    name: Optional[DnsSubdomain] = None
    """The Secret's name. Omitted: `<worker name>-multikueue`."""
    from_file: Annotated[Optional[str], SELECTS_KUBECONFIG] = None
    """A kubeconfig file (cluster mode kubeconfig, and a stack that is not protected: a protected one references a
    Secret made outside it, docs/multikueue.md "The worker credential") that the deploy reads as a Pulumi secret and
    writes into the
    Secret: it is encrypted in the state and never shown in a plan. Replace the file and run `up` to rotate the
    credentials. The file must satisfy Kueue's kubeconfig checks (certificate-authority-data, no tokenFile, no exec
    or auth-provider, no basic auth, TLS verified). Omitted: the Secret is yours (created and rotated outside the
    stack); the stack only refers to it. In sandbox mode the sandbox writes it (`kueue-cohorts sandbox up --workers N`);
    in render mode it is always yours (no credentials are written to the render directory)."""

    def resolved_name(self, worker: str) -> str:
        """`name`, or `<worker>-multikueue` when omitted."""
        return self.name or f"{worker}-multikueue"


class MultiKueueWorker(Model):
    """One entry of `multiKueue.workers`: a worker cluster (its MultiKueueCluster on the manager, its own kubernetes
    provider for the deploy)."""

    name: DnsLabel
    """The MultiKueueCluster name on the manager; also names the worker's provider (`k8s-worker-<name>`) and, in
    sandbox mode, the worker sandbox (`kueue-cohorts sandbox up --workers N` starts the first N workers)."""
    kubeconfig: Annotated[Optional[str], SELECTS_KUBECONFIG] = None
    """Kubeconfig file the deploy uses for this worker (cluster mode kubeconfig only; refused in the others).
    Omitted: the kubernetes client's default (~/.kube/config)."""
    context: Annotated[Optional[str], SELECTS_CONTEXT] = None
    """The worker's kubeconfig context (cluster mode kubeconfig only, required there: the file's current context
    may well be the manager)."""
    secret: WorkerSecret = WorkerSecret()
    """The Secret the manager's Kueue reads the worker's kubeconfig from. Default: `<name>-multikueue`, yours
    (kubeconfig mode) or written from the sandbox (sandbox mode)."""
    service_account: DnsLabel = SERVICE_ACCOUNT
    """The ServiceAccount in Kueue's namespace on the worker that the manager's Kueue acts as: the stack registers it
    with a ClusterRole holding exactly the rules MultiKueue needs for the manager's enabled integrations. The
    kubeconfig in `secret` must authenticate as it. Default multikueue."""
    node_pools: Optional[list[NodePool]] = Field(default=None, min_length=1)
    """The worker's physical capacity (as `nodePools`): the worker's cohorts are judged against it (inference's
    quota must fit every worker) and the worker sandbox builds its kwok nodes from it. Omitted: the stack's
    nodePools."""


class MultiKueueDispatch(Model):
    """One entry of `multiKueue.dispatch`: a ClusterQueue of the stack whose workloads the manager dispatches."""

    cluster_queue: DnsSubdomain
    """A ClusterQueue of the stack (a layout's clusterQueue, or a sharedPool tenant's). On the manager it gets the
    AdmissionCheck; on the workers it runs the dispatched workloads as any other ClusterQueue."""
    workers: list[DnsLabel] = Field(min_length=1, max_length=MAX_CLUSTERS)
    """Names of `multiKueue.workers`, in dispatch order: MultiKueueConfig `spec.clusters`, which Kueue's Incremental
    dispatcher nominates in this order (the default AllAtOnce dispatcher offers the workload to all at once). 1 to
    20, each once."""
    name: Optional[DnsLabel] = None
    """Name of the AdmissionCheck and its MultiKueueConfig (an AdmissionCheck's parameters name is a DNS-1123 label,
    at most 63 characters). Omitted: `<clusterQueue>-multikueue`."""

    def check_name(self) -> str:
        """`name`, or `<clusterQueue>-multikueue` when omitted."""
        return self.name or f"{self.cluster_queue}-multikueue"


class ManagerTrainer(str, Enum):
    """What serves the TrainJob API on the manager (`multiKueue.managerTrainer`)."""

    CONTROLLER = "Controller"  # the Kubeflow Trainer controller runs on the manager (the sandbox's case)
    CRDS_ONLY = "CRDsOnly"     # only the Trainer's CRDs: nothing on the manager reconciles a TrainJob


class MultiKueueSettings(Model):
    """`kueue-cohorts:multiKueue`: the worker clusters and which ClusterQueues dispatch to them."""

    workers: list[MultiKueueWorker] = Field(min_length=1)
    """The worker clusters (>= 1), each with a unique name and Secret."""
    dispatch: list[MultiKueueDispatch] = Field(min_length=1)
    """The dispatching ClusterQueues (>= 1), each once, each with its workers in dispatch order."""
    manager_trainer: ManagerTrainer = ManagerTrainer.CONTROLLER
    """What serves the TrainJob API on the manager: Controller (the Kubeflow Trainer controller runs there) or
    CRDsOnly (only its CRDs). Kueue unsuspends a dispatched TrainJob on the manager (its spec.managedBy names
    MultiKueue), and the pinned Trainer v2.2.1 ignores spec.managedBy (kubeflow/trainer#3632, fixed by #3681 after
    it): with Controller, the TrainJob would run on the manager as well, so a ClusterQueue whose namespaces run the
    stack's trainingRuntime may dispatch only with CRDsOnly. In sandbox mode `kueue-cohorts sandbox up` follows it (with
    CRDsOnly the manager sandbox runs no Trainer controller and has none of its webhook configurations). Default
    Controller."""

    def worker(self, name: str) -> Optional[MultiKueueWorker]:
        """The worker called `name`, or None."""
        return next((w for w in self.workers if w.name == name), None)
