"""Layer 4, resources: Pulumi ComponentResources. Each registers exactly the manifests the model assembled for it and
adds only lifecycle (parent, aliases, depends_on, replace_on_changes, retain_on_delete); none reads config, the
environment or a cluster, and none builds a manifest dict of its own.

- ``manifest``: one rendered object -> one Kubernetes resource (``ManifestResource``);
- ``layouts``: the two cohort layouts (``InferenceTrainingCohort``, ``SharedPoolCohort``);
- ``checkpoint``: the ReadWriteMany ``CheckpointVolume`` of a training namespace;
- ``training``: the ``PreemptibleTrainingRuntime`` and ``train_job``; ``inference``: KServe ``InferenceService``;
- ``kueue_install``: ``KueueInstallation`` (Kueue's Helm chart with the stack's manager Configuration);
- ``admission``: ``AdmissionGuardrails``; ``preview_identity``: ``PreviewIdentity``.
"""
from __future__ import annotations

from components.resources.admission import AdmissionGuardrails, AdmissionGuardrailsArgs
from components.resources.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from components.resources.inference import InferenceService, InferenceServiceArgs
from components.resources.kueue_install import KueueInstallation, KueueInstallationArgs
from components.resources.layouts import (
    InferenceTrainingCohort,
    InferenceTrainingCohortArgs,
    SharedPoolCohort,
    SharedPoolCohortArgs,
)
from components.resources.manifest import ManifestResource
from components.resources.preview_identity import PreviewIdentity, PreviewIdentityArgs
from components.resources.training import PreemptibleTrainingRuntime, PreemptibleTrainingRuntimeArgs

__all__ = [
    "AdmissionGuardrails", "AdmissionGuardrailsArgs", "CheckpointVolume", "CheckpointVolumeArgs", "InferenceService",
    "InferenceServiceArgs", "InferenceTrainingCohort", "InferenceTrainingCohortArgs", "KueueInstallation",
    "KueueInstallationArgs", "ManifestResource", "PreemptibleTrainingRuntime", "PreemptibleTrainingRuntimeArgs",
    "PreviewIdentity", "PreviewIdentityArgs", "SharedPoolCohort", "SharedPoolCohortArgs",
]
