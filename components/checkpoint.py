"""CheckpointVolume: the ReadWriteMany PVC that a training namespace's checkpoints live on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from components.render import checkpoint_claim
from components.settings import CheckpointSettings

ACCESS_MODES = ("ReadWriteMany",)


@dataclass(frozen=True)
class CheckpointVolumeArgs:
    """Inputs of a CheckpointVolume.

    namespace: the training namespace (DNS-1123 label). settings: claim name, storageClassName (omitted: the
    cluster default class, which must support ReadWriteMany), size (Kubernetes quantity) and retain_on_delete
    (default true: `pulumi destroy` leaves the PVC and its checkpoints in place).
    """

    namespace: str
    settings: CheckpointSettings


class CheckpointVolume(pulumi.ComponentResource):
    """A ReadWriteMany PersistentVolumeClaim for checkpoints, shared by every pod of a TrainJob and by its restarts.

    Every node of a preempted TrainJob flushes a `checkpoint-N/` here on SIGTERM, and the re-admitted run resumes
    from the newest complete one, so the claim must be RWX (several pods, several nodes) and outlive the pods.
    Attributes: `claim_name` (str), `namespace` (str), `access_modes` (("ReadWriteMany",)), `pvc` (the
    PersistentVolumeClaim). Upstream: core/v1 PersistentVolumeClaimSpec.
    """

    def __init__(self, name: str, args: CheckpointVolumeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:training:CheckpointVolume", name, None, opts)
        self.claim_name = args.settings.claim_name
        self.namespace = args.namespace
        self.access_modes = ACCESS_MODES
        # The manifest the settings check judged (render.checkpoint_claim); skipAwait: a PVC of a class with
        # WaitForFirstConsumer binding stays Pending until a pod uses it.
        manifest = checkpoint_claim(self.namespace, self.claim_name, args.settings.storage_class_name,
                                    args.settings.size)
        self.pvc = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.settings.retain_on_delete),
        )
        self.register_outputs({"claimName": self.claim_name, "namespace": self.namespace})
