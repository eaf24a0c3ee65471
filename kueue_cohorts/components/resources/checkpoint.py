"""CheckpointVolume: the ReadWriteMany PVC that a training namespace's checkpoints live on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import pulumi

from kueue_cohorts.components.checks.validation import judge_objects
from kueue_cohorts.components.model.render import Rendered, checkpoint
from kueue_cohorts.components.resources.judged import InvalidStack, stand_in
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings import CheckpointSettings

CHECKPOINT_KEY = ("inferenceTraining", "training", "checkpoint")
"""The config key of the checkpoint settings (`Rendered.fields` of the claim point below it)."""


@dataclass(frozen=True)
class CheckpointVolumeArgs:
    """Inputs of a CheckpointVolume."""

    namespace: pulumi.Input[str]
    """The training namespace the claim is made in; required. An Output (`k8s.core.v1.Namespace(...).metadata.name`)
    is applied once it resolves (components/resources/judged.py)."""
    settings: CheckpointSettings
    """The claim (`inferenceTraining.training.checkpoint`): claimName (required), storageClassName, size (omitted:
    5Gi) and retainOnDelete (omitted: true, `pulumi destroy` leaves the PVC and its checkpoints in place)."""
    storage_class_name: Optional[pulumi.Input[str]] = None
    """The StorageClass of the claim; it must support ReadWriteMany (cephfs, nfs, EFS). Omitted:
    `settings.storageClassName`; both omitted: storageClassName is not written and the cluster's default class
    provisions the claim."""


def resolved_props(manifest: Mapping[str, Any], resolved: pulumi.Output[Rendered]) -> dict[str, pulumi.Input[Any]]:
    """What to register for `manifest` (rendered with stand-ins) once `resolved` (the same object rendered from the
    resolved values) is known: apiVersion and kind as they are, every other top-level field from `resolved`."""

    def field(key: str) -> pulumi.Output[Any]:
        return resolved.apply(lambda r: r.manifest[key])

    return {key: value if key in ("apiVersion", "kind") else field(key) for key, value in manifest.items()}


class CheckpointVolume(pulumi.ComponentResource):
    """A ReadWriteMany PersistentVolumeClaim for checkpoints, shared by every pod of a TrainJob and by its restarts.

    Every node of a preempted TrainJob flushes a `checkpoint-N/` here on SIGTERM, and the re-admitted run resumes
    from the newest complete one, so the claim must be RWX (several pods, several nodes) and outlive the pods.
    The claim is the model's (`components.model.render.checkpoint`), judged by the rule book at construction and,
    when an input is an Output, rendered again from the resolved values and registered as that render has it.
    Children: `{name}-pvc` (the claim; `retain_on_delete` as `settings.retainOnDelete` says).
    Attributes: `claim_name` (str), `namespace` (the namespace as given: a str or an Output), `claim` (the Rendered
    claim, a stand-in in place of an Output), `access_modes` (the claim's spec.accessModes), `pvc` (the
    PersistentVolumeClaim). Upstream: core/v1 PersistentVolumeClaimSpec.
    Raises:
        InvalidStack: the rule book refuses the claim (nothing is registered then).
    """

    def __init__(self, name: str, args: CheckpointVolumeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        settings = args.settings
        inputs: dict[str, pulumi.Output[Any]] = {}
        namespace = args.namespace if isinstance(args.namespace, str) else stand_in(("checkpoint", "namespace"))
        if not isinstance(args.namespace, str):
            inputs["namespace"] = pulumi.Output.from_input(args.namespace)
        storage_class = args.storage_class_name
        if storage_class is not None and not isinstance(storage_class, str):
            inputs["storage_class"] = pulumi.Output.from_input(storage_class)
            storage_class = stand_in(CHECKPOINT_KEY + ("storageClassName",))
        if storage_class is not None:
            settings = settings.model_copy(update={"storage_class_name": storage_class})
        self.claim = _judged(namespace, settings)
        super().__init__("kueue-cohorts:training:CheckpointVolume", name, None, opts)
        self.claim_name = self.claim.name
        self.namespace = args.namespace
        self.access_modes = tuple(self.claim.manifest["spec"]["accessModes"])
        props: Optional[dict[str, pulumi.Input[Any]]] = None
        if inputs:
            keys = list(inputs)

            def resolve(values: list[Any]) -> Rendered:
                given = dict(zip(keys, values, strict=True))
                update = {"storage_class_name": given["storage_class"]} if "storage_class" in given else {}
                return _judged(given.get("namespace", namespace), settings.model_copy(update=update))

            props = resolved_props(self.claim.manifest, pulumi.Output.all(*inputs.values()).apply(resolve))
        # skipAwait (in the rendered claim): a PVC of a class with WaitForFirstConsumer binding stays Pending until a
        # pod uses it.
        self.pvc = ManifestResource.of(
            f"{name}-pvc", self.claim,
            pulumi.ResourceOptions(parent=self, retain_on_delete=settings.retain_on_delete), props=props)
        self.register_outputs({"claimName": self.claim_name, "namespace": self.namespace})


def _judged(namespace: str, settings: CheckpointSettings) -> Rendered:
    """The claim of `namespace`, judged by the rule book alone (raises InvalidStack with every problem)."""
    claim = checkpoint(namespace, settings)
    raw = {"inferenceTraining": {"training": {"checkpoint": settings.model_dump(mode="json", by_alias=True)}}}
    problems, _ = judge_objects([claim], raw, {})
    if problems:
        raise InvalidStack(problems)
    return claim
