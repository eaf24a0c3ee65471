"""PreemptibleTrainingRuntime: a Kubeflow Trainer TrainingRuntime whose TrainJobs survive Kueue preemption, and the
`train_job` helper that queues a TrainJob of it.

The manifests come from the model (`components.model.render.training_runtime`, over `components/model/runtime.py`),
registered as rendered; the rules that judge them (per-node requests x
numNodes within the training ClusterQueue's usable quota, grace period above the checkpoint save time, exec form)
are the rule book's (`policy/rules/`), applied to the rendered objects before any resource is registered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.model.render import Rendered
from components.model.runtime import render_trainjob
from components.resources.checkpoint import CheckpointVolume
from components.resources.manifest import ManifestResource
from components.settings.runtime import TrainingRuntimeSettings

TYPE_TOKEN = "kueue-cohorts:training:PreemptibleTrainingRuntime"


def _object_name(obj: Any, what: str) -> str:
    for attribute in ("name", "object_name"):
        value = getattr(obj, attribute, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"{what} must be an object with a plain-string .name (got {type(obj).__name__})")


# --- Pulumi components -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreemptibleTrainingRuntimeArgs:
    """Inputs of a PreemptibleTrainingRuntime.

    settings: `kueue-cohorts:trainingRuntime` (TrainingRuntimeSettings(image=...): the image is required; the
        component's outputs).
    checkpoint_volume: the training namespace's CheckpointVolume (its namespace is the runtime's namespace, its
        claim is mounted at settings.checkpoint_mount_path); required: without it a preemption loses the run.
    objects: the rendered (TrainingRuntime, trainer ConfigMap) of that namespace
        (`components.model.render.training_runtime(settings, namespace, claim_name)`), registered as they are.
    """

    settings: TrainingRuntimeSettings
    checkpoint_volume: CheckpointVolume
    objects: tuple[Rendered, Rendered]


class PreemptibleTrainingRuntime(pulumi.ComponentResource):
    """The TrainingRuntime plus the ConfigMap carrying its entrypoint, in the checkpoint volume's namespace.

    Children: `{name}-trainer` (core/v1 ConfigMap, the trainer/ package) and `{name}-runtime` (TrainingRuntime,
    depending on the ConfigMap and the PVC), each the rendered manifest as it is.
    Attributes: `name` (TrainingRuntime name), `namespace`, `save_steps` (int), `termination_grace_period_seconds`
    (int), `manifest` (the rendered TrainingRuntime dict), `config_map`, `runtime`.
    Raises:
        ValueError: the checkpoint volume is not ReadWriteMany, or the rendered objects are not in its namespace
            (nothing is registered then).
    """

    def __init__(self, name: str, args: PreemptibleTrainingRuntimeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        settings = args.settings
        volume = args.checkpoint_volume
        runtime, config_map = args.objects
        if "ReadWriteMany" not in tuple(volume.access_modes):
            raise ValueError(
                f"checkpoint_volume.access_modes = {list(volume.access_modes)}: the checkpoint PVC must be "
                "ReadWriteMany (every node of a TrainJob and its restarts mount it). Fix: use a ReadWriteMany "
                "CheckpointVolume (a cephfs or nfs storage class)."
            )
        if {runtime.namespace, config_map.namespace} != {volume.namespace}:
            raise ValueError(
                f"the TrainingRuntime ({runtime.namespace}) and its ConfigMap ({config_map.namespace}) must be in the "
                f"checkpoint volume's namespace {volume.namespace!r}. Fix: render them for that namespace "
                "(components.model.render.training_runtime).")
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.name = settings.name
        self.namespace = volume.namespace
        self.save_steps = settings.save_steps
        self.termination_grace_period_seconds = settings.grace_period_seconds
        self.manifest = runtime.manifest
        self.config_map = ManifestResource.of(f"{name}-trainer", config_map, pulumi.ResourceOptions(parent=self))
        self.runtime = ManifestResource.of(
            f"{name}-runtime", runtime,
            pulumi.ResourceOptions(parent=self, depends_on=[self.config_map, volume.pvc]),
        )
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "saveSteps": self.save_steps,
                "terminationGracePeriodSeconds": self.termination_grace_period_seconds,
            }
        )


@dataclass(frozen=True)
class TrainJobArgs:
    """Inputs of `train_job`.

    job_name: the TrainJob name (RFC 1035 label; names the run's checkpoint directory).
    runtime: the PreemptibleTrainingRuntime (the TrainJob is created in its namespace and references it).
    local_queue: the training LocalQueue object (anything with a plain-string `.name`); must live in the runtime's
        namespace when it exposes `.namespace` / `.object_namespace`.
    priority_class: the WorkloadPriorityClass object (`.name`).
    num_nodes: spec.trainer.numNodes; None keeps the runtime's.
    """

    job_name: str
    runtime: PreemptibleTrainingRuntime
    local_queue: Any
    priority_class: Any
    num_nodes: Optional[int] = None


def train_job(
    resource_name: str, args: TrainJobArgs, opts: Optional[pulumi.ResourceOptions] = None
) -> k8s.apiextensions.CustomResource:
    """Register a TrainJob of a PreemptibleTrainingRuntime, labelled for the training LocalQueue and priority.

    Returns the TrainJob CustomResource (type token kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob).
    Raises ValueError for a bad job name or a LocalQueue in another namespace; TypeError for objects without .name.
    """
    queue = args.local_queue
    queue_namespace = getattr(queue, "namespace", None) or getattr(queue, "object_namespace", None)
    if isinstance(queue_namespace, str) and queue_namespace != args.runtime.namespace:
        raise ValueError(
            f"LocalQueue {_object_name(args.local_queue, 'local_queue')!r} is in namespace {queue_namespace!r}, the "
            f"runtime in {args.runtime.namespace!r}: a TrainJob is queued by a LocalQueue of its own namespace"
        )
    manifest = render_trainjob(
        args.job_name,
        args.runtime.namespace,
        args.runtime.name,
        _object_name(args.local_queue, "local_queue"),
        _object_name(args.priority_class, "priority_class"),
        args.num_nodes,
    )
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions.merge(pulumi.ResourceOptions(depends_on=[args.runtime.runtime]), opts),
    )
