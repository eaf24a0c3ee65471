"""CheckpointVolume: the ReadWriteMany PVC that a training namespace's checkpoints live on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.model.render import Rendered
from components.resources.manifest import ManifestResource


@dataclass(frozen=True)
class CheckpointVolumeArgs:
    """Inputs of a CheckpointVolume.

    claim: the rendered PersistentVolumeClaim (`components.model.render.checkpoint(namespace, CheckpointSettings)`:
    ReadWriteMany, the claim name, storageClassName (omitted: the cluster default class, which must support
    ReadWriteMany) and size), registered as it is. retain_on_delete: `checkpoint.retainOnDelete` (default true:
    `pulumi destroy` leaves the PVC and its checkpoints in place).
    """

    claim: Rendered
    retain_on_delete: bool = True


class CheckpointVolume(pulumi.ComponentResource):
    """A ReadWriteMany PersistentVolumeClaim for checkpoints, shared by every pod of a TrainJob and by its restarts.

    Every node of a preempted TrainJob flushes a `checkpoint-N/` here on SIGTERM, and the re-admitted run resumes
    from the newest complete one, so the claim must be RWX (several pods, several nodes) and outlive the pods.
    Children: `{name}-pvc` (the claim as rendered; `retain_on_delete` as asked).
    Attributes: `claim_name` (str), `namespace` (str), `access_modes` (the claim's spec.accessModes), `pvc` (the
    PersistentVolumeClaim). Upstream: core/v1 PersistentVolumeClaimSpec.
    """

    def __init__(self, name: str, args: CheckpointVolumeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:training:CheckpointVolume", name, None, opts)
        self.claim_name = args.claim.name
        self.namespace = args.claim.namespace or ""
        self.access_modes = tuple(args.claim.manifest["spec"]["accessModes"])
        # The manifest the settings check judged (render.checkpoint); skipAwait: a PVC of a class with
        # WaitForFirstConsumer binding stays Pending until a pod uses it.
        self.pvc = ManifestResource.of(f"{name}-pvc", args.claim,
                                       pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete))
        self.register_outputs({"claimName": self.claim_name, "namespace": self.namespace})
