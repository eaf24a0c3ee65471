"""`kueue-cohorts:cluster`: where the stack goes (sandbox, kubeconfig, render), the client's limits, and the node
pools (GPUs per node, labels, taints) that the capacity promise is judged against.
"""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import (
    SELECTS_CONTEXT,
    SELECTS_KUBECONFIG,
    SELECTS_PATH,
    SELECTS_TARGET,
    ClusterMode,
    DnsLabel,
    DnsSubdomain,
    Model,
    ResourceList,
)
from kueue_cohorts.components.settings.runtime import (
    WholeNumber,
)

# --- building blocks -------------------------------------------------------------------------------------------------


CLIENT_LIMIT_MAX = 1_000_000
"""Upper bound of kubeClientSettings qps and burst. The provider reads burst as a Go int and hands qps to client-go
as a float32: a burst above the int64 range passed the settings check and a preview, then failed `up` in the
provider's configure (`cannot unmarshal number 10000000000000000000 ... of type int`, exit 1), and a qps above the
int64 range reaches the program as a float refused only inside the engine (exit 1). A million requests a second is
far beyond any API server, and exact in every one of those types."""


class KubeClientSettings(Model):
    """`kueue-cohorts:cluster.kubeClientSettings`: the kubernetes provider's client-side rate limit towards the API
    server (the provider's own `kubeClientSettings`, client-go's token bucket)."""

    qps: WholeNumber = Field(default=200, ge=1, le=CLIENT_LIMIT_MAX)
    """Requests per second the provider sends the API server (a whole number, 1 to 1,000,000). The provider's own
    default, 50, made a 500-tenant `up` wait on the limit: 83.0 s at 50, 56.9 s at 200 in one run (`python -m
    kueue_cohorts.benchmarks.engine --variant qps-200`). The API server's priority and fairness still protects it."""
    burst: WholeNumber = Field(default=400, ge=1, le=CLIENT_LIMIT_MAX)
    """Requests the provider may send at once above qps (1 to 1,000,000)."""


class ClusterSettings(Model):
    """`kueue-cohorts:cluster`: the provider's target."""

    mode: Annotated[ClusterMode, SELECTS_TARGET] = ClusterMode.SANDBOX
    """Where the kubernetes provider sends objects: `sandbox` (the local sandbox, `kueue-cohorts sandbox up`),
    `kubeconfig` (a real cluster) or `render` (manifests into renderDir, no cluster)."""
    render_dir: Annotated[Optional[str], SELECTS_PATH] = None
    """Directory for the rendered manifests, relative to the project root. Required in render mode, refused in
    the others."""
    kubeconfig: Annotated[Optional[str], SELECTS_KUBECONFIG] = None
    """Kubeconfig file (kubeconfig mode only). Omitted: the kubernetes client's default (~/.kube/config)."""
    context: Annotated[Optional[str], SELECTS_CONTEXT] = None
    """Kubeconfig context (kubeconfig mode only). Omitted: the file's current context."""
    kube_client_settings: Optional[KubeClientSettings] = None
    """The provider's rate limit towards the API server (sandbox and kubeconfig modes; render mode has no API
    server). Omitted: qps 200, burst 400."""


class Taint(Model):
    """A core/v1 Taint: a node pool's `taints[]`, a ResourceFlavor's `spec.nodeTaints[]`."""

    key: str
    """Taint key."""
    value: Optional[str] = None
    """Taint value."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """NoSchedule, PreferNoSchedule or NoExecute."""


class NodePool(Model):
    """One entry of `kueue-cohorts:nodePools`: identical nodes that make up the physical capacity."""

    name: DnsLabel
    """Pool name (DNS-1123 label)."""
    count: WholeNumber = Field(default=1, ge=1)
    """Number of identical nodes (>= 1)."""
    capacity: ResourceList
    """Allocatable per node, resource -> Kubernetes quantity (`cpu: 8`, `memory: 32Gi`, `nvidia.com/gpu: 4`).
    Extended resources are whole numbers. The nominalQuota of every cohort, in each ResourceFlavor, must fit the
    count x capacity of the pools that flavor selects by its nodeLabels."""
    labels: dict[str, str] = Field(default_factory=dict)
    """The nodes' labels, as the real nodes carry them (the sandbox puts them on its kwok nodes). They decide which
    ResourceFlavors place pods here: a flavor selects the pools that carry every one of its nodeLabels (Kueue copies
    them into the pods' nodeSelector), and the nominalQuota of all flavors must fit the pools they select, flavors
    that select the same pools sharing them. Default none: only a flavor without nodeLabels selects the pool."""
    taints: list[Taint] = Field(default_factory=list, max_length=8)
    """The nodes' taints, as the real nodes carry them (the sandbox puts them on its kwok nodes). On GPU pools they
    are the fence that keeps pods Kueue never admitted off the GPUs inference's quota counts on: a NoSchedule or
    NoExecute taint whose key is no resource name (a taint keyed `nvidia.com/gpu` is tolerated by every pod that asks
    for that GPU: Kubernetes' ExtendedResourceToleration admission plugin, kueue#170), tolerated by the tolerations
    of the ResourceFlavors that place pods here (Kueue adds a flavor's tolerations to the pods it admits; a fence
    a flavor does not tolerate is refused). Default none: the settings check then warns that the GPUs are open to pods
    Kueue never sees (at most 8)."""
    resource_flavor: Optional[DnsSubdomain] = None
    """The ResourceFlavor these nodes are meant for (a name of resourceFlavors, or of the one resourceFlavor): a
    flavor of resourceFlavors without nodeLabels takes the labels its pools share. The capacity counts where the
    labels say, not by this name. Omitted: the stack's one flavor (required when the stack declares several
    resourceFlavors)."""


class Toleration(Model):
    """ResourceFlavor `spec.tolerations[]` (core/v1 Toleration)."""

    key: Optional[str] = None
    """Toleration key (omitted with operator Exists: every taint)."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """Exists or Equal."""
    value: Optional[str] = None
    """Value for operator Equal."""
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None
    """Effect to tolerate; omitted: all effects."""

