"""MultiKueue as Pulumi components: the manager's MultiKueue objects, and each worker's identity.

`MultiKueueManager` registers, with the manager's provider, the objects `components.model.render` made for
`multiKueue` (`RenderedStack.multikueue`): per worker the kubeconfig Secret (when the stack writes it) and the
MultiKueueCluster, per dispatch entry the MultiKueueConfig and the AdmissionCheck. A Secret's `stringData.kubeconfig`
is the only thing added to a rendered object: the worker's kubeconfig, handed in as a Pulumi secret (read at deploy
time by components/stack/target.py), so the state holds it encrypted and no plan shows it.

`MultiKueueWorkerIdentity` registers, with a worker's provider, the ServiceAccount, ClusterRole and
ClusterRoleBinding the manager's Kueue acts as there (`RenderedWorker.identity`). The worker's cohorts and runtimes
are registered by the same components as the manager's (components/stack/program.py), under the worker's provider.

Upstream: kubernetes-sigs/kueue apis/kueue/v1beta2/multikueue_types.go (the Secret key `kubeconfig` in Kueue's
namespace), v0.19.2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

import pulumi

from kueue_cohorts.components.model.multikueue import SECRET_KEY, WORKER_LABEL
from kueue_cohorts.components.model.render import Rendered
from kueue_cohorts.components.resources.manifest import ManifestResource


@dataclass(frozen=True)
class MultiKueueManagerArgs:
    """Inputs of MultiKueueManager.

    objects: the manager's rendered MultiKueue objects (`RenderedStack.multikueue`), registered as they are.
    kubeconfigs: worker name -> its kubeconfig text, for each Secret among `objects` (a Pulumi secret Output, or a
    plain string the component wraps as one). A Secret whose worker has none here is refused (KeyError): the stack
    never registers an empty kubeconfig.
    """

    objects: tuple[Rendered, ...]
    kubeconfigs: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class MultiKueueManager(pulumi.ComponentResource):
    """The manager's MultiKueue objects.

    Children: `<name>-secret-<worker>` (Secret, its `stringData.kubeconfig` a Pulumi secret), `<name>-cluster-<worker>`
    (MultiKueueCluster, after its Secret), `<name>-config-<name>` (MultiKueueConfig) and `<name>-check-<name>`
    (AdmissionCheck, after its MultiKueueConfig). Attributes: `clusters`, `configs`, `checks`, `secrets` (by object
    name). Outputs: `clusters`, `admissionChecks` (sorted names).
    """

    def __init__(self, name: str, args: MultiKueueManagerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:multikueue:MultiKueueManager", name, None, opts)
        self.secrets: dict[str, ManifestResource] = {}
        self.clusters: dict[str, ManifestResource] = {}
        self.configs: dict[str, ManifestResource] = {}
        self.checks: dict[str, ManifestResource] = {}
        child = pulumi.ResourceOptions(parent=self)
        for item in args.objects:
            if item.kind == "Secret":
                worker = str(item.manifest["metadata"]["labels"][WORKER_LABEL])
                text = pulumi.Output.secret(args.kubeconfigs[worker])
                manifest = {**item.manifest, "stringData": {SECRET_KEY: text}}
                self.secrets[item.name] = ManifestResource(f"{name}-secret-{worker}", manifest, child)
            elif item.kind == "MultiKueueCluster":
                location = item.manifest["spec"]["clusterSource"]["kubeConfig"]["location"]
                deps = [self.secrets[location]] if location in self.secrets else []
                self.clusters[item.name] = ManifestResource.of(
                    f"{name}-cluster-{item.name}", item, pulumi.ResourceOptions(parent=self, depends_on=deps))
            elif item.kind == "MultiKueueConfig":
                after_clusters = pulumi.ResourceOptions(parent=self, depends_on=list(self.clusters.values()))
                self.configs[item.name] = ManifestResource.of(f"{name}-config-{item.name}", item, after_clusters)
            else:  # the AdmissionCheck of the MultiKueueConfig of the same name
                config = [self.configs[item.name]] if item.name in self.configs else []
                self.checks[item.name] = ManifestResource.of(f"{name}-check-{item.name}", item,
                                                             pulumi.ResourceOptions(parent=self, depends_on=config))
        self.register_outputs({"clusters": sorted(self.clusters), "admissionChecks": sorted(self.checks)})


@dataclass(frozen=True)
class MultiKueueWorkerIdentityArgs:
    """Inputs of MultiKueueWorkerIdentity: `objects`, the worker's rendered identity (`RenderedWorker.identity`: the
    ServiceAccount, the ClusterRole and the ClusterRoleBinding with the reads, a Role and RoleBinding with the writes
    per dispatched namespace), registered as they are."""

    objects: tuple[Rendered, ...]


class MultiKueueWorkerIdentity(pulumi.ComponentResource):
    """The identity the manager's Kueue acts as on one worker.

    Children: `<name>-<kind>` (serviceaccount, clusterrole, clusterrolebinding) and `<name>-<kind>-<namespace>` (role,
    rolebinding), each binding after the role and the account. The program registers it after the worker's cohorts
    (the Roles live in the namespaces they create). Outputs: `serviceAccount` (`<namespace>/<name>`), `clusterRole`
    (name).
    """

    def __init__(self, name: str, args: MultiKueueWorkerIdentityArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:multikueue:MultiKueueWorkerIdentity", name, None, opts)
        made: list[pulumi.Resource] = []
        account, role = "", ""
        for item in args.objects:
            deps = list(made) if item.kind in ("ClusterRoleBinding", "RoleBinding") else []
            child = f"{name}-{item.kind.lower()}" + (f"-{item.namespace}" if item.kind in ("Role", "RoleBinding")
                                                      else "")
            made.append(ManifestResource.of(child, item, pulumi.ResourceOptions(parent=self, depends_on=deps)))
            if item.kind == "ServiceAccount":
                account = f"{item.namespace}/{item.name}"
            elif item.kind == "ClusterRole":
                role = item.name
        self.register_outputs({"serviceAccount": account, "clusterRole": role})
