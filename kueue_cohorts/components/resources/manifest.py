"""Register a manifest dict (a rendered object, components/model/render.py) as a Kubernetes resource of the
pulumi-kubernetes provider.

`pulumi_kubernetes.apiextensions.CustomResource` accepts only apiVersion, kind, metadata and spec, but a
WorkloadPriorityClass carries `value` and `description` at the top level. `ManifestResource` registers any manifest
under the same type token the provider and the policy pack use: `kubernetes:<apiVersion>:<kind>`
(`kubernetes:core/v1:<kind>` for the core group). The lifecycle a kind needs everywhere it is registered comes with
it (`lifecycle`).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import pulumi
from pulumi_kubernetes import _utilities as k8s_utilities

from kueue_cohorts.components.model.kueue import RELEASE_WAIT_S
from kueue_cohorts.components.model.render import Rendered

#: The Kueue kinds whose delete Kueue holds back with its `kueue.x-k8s.io/resource-in-use` finalizer while they are in
#: use (v0.19.2 pkg/controller/core/clusterqueue_controller.go, resourceflavor_controller.go): their delete is bounded.
RELEASED_BY_KUEUE = ("ClusterQueue", "ResourceFlavor")
KUEUE_GROUP = "kueue.x-k8s.io/"
#: The Kubeflow Trainer holds a TrainingRuntime back the same way, with `trainer.kubeflow.org/resource-in-use`, while a
#: TrainJob of its namespace names it (kubeflow/trainer#2608, v2.2.1 pkg/controller/trainingruntime_controller.go),
#: also a suspended one: its delete is bounded too (deploy/queue_holders.py names the TrainJobs).
RELEASED_BY_TRAINER = ("TrainingRuntime",)
TRAINER_GROUP = "trainer.kubeflow.org/"


def lifecycle(api_version: str, kind: str) -> pulumi.ResourceOptions:
    """The resource options every object of `kind` (apiVersion `api_version`) is registered with, whatever component
    registers it: for a ClusterQueue or a ResourceFlavor of Kueue, and a TrainingRuntime of the Trainer, a delete
    timeout of `RELEASE_WAIT_S` seconds (components/model/kueue.py: an `up` that deletes one, or a `destroy`, never
    waits longer for its controller to release it, and fails naming it; `deploy` then says what holds it,
    deploy/queue_holders.py); none for any other kind."""
    if (api_version.startswith(KUEUE_GROUP) and kind in RELEASED_BY_KUEUE) or \
            (api_version.startswith(TRAINER_GROUP) and kind in RELEASED_BY_TRAINER):
        return pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(delete=f"{RELEASE_WAIT_S}s"))
    return pulumi.ResourceOptions()


class ManifestResource(pulumi.CustomResource):
    """A Kubernetes object given as a full manifest (Kueue, Trainer and KServe custom resources).

    Args:
        resource_name: the Pulumi resource name (unique in the stack).
        manifest: the object as the API server receives it: apiVersion, kind, metadata (name, [namespace], labels)
            and any other top-level fields (spec, value, description, ...), in the API's camelCase names.
        opts: resource options; pass `parent=` and the kubernetes `provider=` through them.
        patch: register a server-side apply patch of these fields (`kubernetes:<group>/<version>:<Kind>Patch`,
            pulumi-kubernetes 4.25.0) instead of the whole object.
        props: what to register instead of `manifest` (its fields as Outputs, `JudgedStack.props`); omitted: the
            manifest as it is. The type token and the plain-string twins come from `manifest` either way.
    Outputs: one output per top-level manifest key (e.g. `.metadata`, `.spec`); plain strings `object_name`,
    `object_namespace`, `object_kind`, `object_api_version`. The kind's `lifecycle` options are merged in.
    """

    def __init__(self, resource_name: str, manifest: Mapping[str, Any], opts: Optional[pulumi.ResourceOptions] = None,
                 patch: bool = False, props: Optional[Mapping[str, pulumi.Input[Any]]] = None):
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            version=k8s_utilities.get_version()))  # type: ignore[no-untyped-call]  # pulumi_kubernetes.utilities is untyped
        if not patch:
            opts = pulumi.ResourceOptions.merge(opts, lifecycle(str(manifest["apiVersion"]), str(manifest["kind"])))
        # Plain-string twins of the manifest (the SDK turns every manifest key into an Output attribute); with
        # `props` from a JudgedStack with Outputs, a name or namespace may be a stand-in (resources/judged.py).
        self.object_api_version: str = manifest["apiVersion"]
        self.object_kind: str = manifest["kind"]
        self.object_name: str = manifest["metadata"]["name"]
        self.object_namespace: Optional[str] = manifest["metadata"].get("namespace")
        # The provider's tokens name the core group "core" (kubernetes:core/v1:Namespace), the API's apiVersion not.
        token_api = self.object_api_version if "/" in self.object_api_version else f"core/{self.object_api_version}"
        super().__init__(f"kubernetes:{token_api}:{self.object_kind}{'Patch' if patch else ''}", resource_name,
                         dict(props if props is not None else manifest), opts)

    @classmethod
    def of(cls, resource_name: str, rendered: Rendered, opts: Optional[pulumi.ResourceOptions] = None,
           props: Optional[Mapping[str, pulumi.Input[Any]]] = None) -> ManifestResource:
        """Register a rendered object exactly as rendered: its manifest (or `props`, the same object with Outputs
        applied) under `rendered.type_token` (a patch as `<Kind>Patch`). Same arguments as the constructor
        otherwise."""
        return cls(resource_name, rendered.manifest, opts, patch=rendered.patch, props=props)
