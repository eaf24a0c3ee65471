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

from kueue_cohorts.components.checks.validation import judge_objects
from kueue_cohorts.components.model.render import Rendered, training_runtime
from kueue_cohorts.components.model.runtime import render_trainjob
from kueue_cohorts.components.resources.checkpoint import CheckpointVolume, resolved_props
from kueue_cohorts.components.resources.judged import InvalidStack, stand_in
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings

TYPE_TOKEN = "kueue-cohorts:training:PreemptibleTrainingRuntime"


def _object_name(obj: Any, what: str) -> str:
    for attribute in ("name", "object_name"):
        value = getattr(obj, attribute, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"{what} must be an object with a plain-string .name (got {type(obj).__name__})")


def judged_runtime(settings: TrainingRuntimeSettings, namespace: str, claim: Rendered) -> tuple[Rendered, Rendered]:
    """The (TrainingRuntime, trainer ConfigMap) of `namespace` on checkpoint claim `claim`
    (`components.model.render.training_runtime`), judged by the rule book together with the claim (promise 4:
    SIGTERM reaches a trainer that can save in time). Raises InvalidStack listing every problem at its
    `trainingRuntime.*` key."""
    objects = training_runtime(settings, namespace, claim.name)
    raw = {"trainingRuntime": settings.model_dump(mode="json", by_alias=True, exclude_unset=True),
           "inferenceTraining": {"training": {"checkpoint": {"claimName": claim.name}}}}
    problems, _ = judge_objects([*objects, claim], raw, {})
    if problems:
        raise InvalidStack(problems)
    return objects


# --- Pulumi components -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreemptibleTrainingRuntimeArgs:
    """Inputs of a PreemptibleTrainingRuntime."""

    settings: TrainingRuntimeSettings
    """`kueue-cohorts:trainingRuntime` (TrainingRuntimeSettings(image=...): the image is required, every other field
    has its documented default); required."""
    checkpoint_volume: CheckpointVolume
    """The training namespace's CheckpointVolume (a cohort's `training_checkpoints[namespace]`, or your own); the
    runtime is made in its namespace and mounts its claim at `settings.checkpointMountPath`. Required: without it a
    preemption loses the run."""
    image: Optional[pulumi.Input[str]] = None
    """The trainer image instead of `settings.image`: a reference or an Output (an image repository's URL with its
    tag). Omitted: `settings.image`."""


class PreemptibleTrainingRuntime(pulumi.ComponentResource):
    """The TrainingRuntime plus the ConfigMap carrying its entrypoint, in the checkpoint volume's namespace.

    The objects are the model's (`components.model.render.training_runtime`), judged by the rule book with the
    volume's claim at construction; when the namespace or the image is an Output, they are rendered and judged again
    from the resolved values and registered as that render has them (the deployment fails with InvalidStack when
    the rule book refuses them).
    Children: `{name}-trainer` (core/v1 ConfigMap, the trainer/ package) and `{name}-runtime` (TrainingRuntime,
    depending on the ConfigMap and the PVC).
    Attributes: `name` (TrainingRuntime name), `namespace` (the volume's: a str or an Output), `save_steps` (int),
    `termination_grace_period_seconds` (int), `manifest` (the rendered TrainingRuntime dict, stand-ins in place of
    Outputs), `config_map`, `runtime`.
    Raises:
        ValueError: the checkpoint volume is not ReadWriteMany (nothing is registered then).
        InvalidStack: the rule book refuses the runtime.
    """

    def __init__(self, name: str, args: PreemptibleTrainingRuntimeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        settings = args.settings
        volume = args.checkpoint_volume
        if "ReadWriteMany" not in tuple(volume.access_modes):
            raise ValueError(
                f"checkpoint_volume.access_modes = {list(volume.access_modes)}: the checkpoint PVC must be "
                "ReadWriteMany (every node of a TrainJob and its restarts mount it). Fix: use a ReadWriteMany "
                "CheckpointVolume (a cephfs or nfs storage class)."
            )
        inputs: dict[str, pulumi.Output[Any]] = {}
        if not isinstance(volume.namespace, str):
            inputs["namespace"] = pulumi.Output.from_input(volume.namespace)
        if args.image is not None and not isinstance(args.image, str):
            inputs["image"] = pulumi.Output.from_input(args.image)
            settings = settings.model_copy(update={"image": stand_in(("trainingRuntime", "image"))})
        elif args.image is not None:
            settings = settings.model_copy(update={"image": args.image})
        namespace = volume.claim.namespace or ""
        runtime, config_map = judged_runtime(settings, namespace, volume.claim)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.name = settings.name
        self.namespace = volume.namespace
        self.save_steps = settings.save_steps
        self.termination_grace_period_seconds = settings.grace_period_seconds
        self.manifest = runtime.manifest
        props: list[Optional[dict[str, pulumi.Input[Any]]]] = [None, None]
        if inputs:
            keys = list(inputs)

            def resolve(values: list[Any]) -> tuple[Rendered, Rendered]:
                given = dict(zip(keys, values, strict=True))
                resolved = settings.model_copy(update={"image": given["image"]}) if "image" in given else settings
                claim = volume.claim
                if "namespace" in given:
                    claim = Rendered({**claim.manifest, "metadata": {**claim.manifest["metadata"],
                                                                     "namespace": given["namespace"]}},
                                     claim.source, claim.fields)
                return judged_runtime(resolved, given.get("namespace", namespace), claim)

            both = pulumi.Output.all(*inputs.values()).apply(resolve)
            props = [resolved_props(runtime.manifest, both.apply(lambda pair: pair[0])),
                     resolved_props(config_map.manifest, both.apply(lambda pair: pair[1]))]
        self.config_map = ManifestResource.of(f"{name}-trainer", config_map, pulumi.ResourceOptions(parent=self),
                                              props=props[1])
        self.runtime = ManifestResource.of(
            f"{name}-runtime", runtime,
            pulumi.ResourceOptions(parent=self, depends_on=[self.config_map, volume.pvc]), props=props[0],
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
    """Inputs of `train_job`."""

    job_name: str
    """The TrainJob name (RFC 1035 label; names the run's checkpoint directory); required."""
    runtime: PreemptibleTrainingRuntime
    """The PreemptibleTrainingRuntime; required. The TrainJob is created in its namespace (applied when that is an
    Output) and references it."""
    local_queue: Any
    """The training LocalQueue object (anything with a plain-string `.name`, e.g. a cohort's
    `training_local_queues[namespace]`); required. It must live in the runtime's namespace when both are plain."""
    priority_class: Any
    """The WorkloadPriorityClass object (`.name`, e.g. a cohort's `training_priority_class`); required."""
    num_nodes: Optional[int] = None
    """spec.trainer.numNodes. Omitted: the runtime's mlPolicy.numNodes."""


def train_job(
    resource_name: str, args: TrainJobArgs, opts: Optional[pulumi.ResourceOptions] = None
) -> k8s.apiextensions.CustomResource:
    """Register a TrainJob of a PreemptibleTrainingRuntime, labelled for the training LocalQueue and priority.

    Returns the TrainJob CustomResource (type token kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob).
    Raises ValueError for a bad job name or a LocalQueue in another namespace; TypeError for objects without .name.
    """
    queue = args.local_queue
    namespace = args.runtime.namespace
    queue_namespace = getattr(queue, "namespace", None) or getattr(queue, "object_namespace", None)
    if isinstance(queue_namespace, str) and isinstance(namespace, str) and queue_namespace != namespace:
        raise ValueError(
            f"LocalQueue {_object_name(args.local_queue, 'local_queue')!r} is in namespace {queue_namespace!r}, the "
            f"runtime in {namespace!r}: a TrainJob is queued by a LocalQueue of its own namespace"
        )

    def render(in_namespace: str) -> dict[str, Any]:
        return render_trainjob(args.job_name, in_namespace, args.runtime.name,
                               _object_name(args.local_queue, "local_queue"),
                               _object_name(args.priority_class, "priority_class"), args.num_nodes)

    manifest = render(namespace if isinstance(namespace, str) else stand_in(("trainJob", "namespace")))
    metadata: pulumi.Input[Any] = manifest["metadata"] if isinstance(namespace, str) else \
        pulumi.Output.from_input(namespace).apply(lambda ns: render(ns)["metadata"])  # type: ignore[arg-type]
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=metadata,
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions.merge(pulumi.ResourceOptions(depends_on=[args.runtime.runtime]), opts),
    )
