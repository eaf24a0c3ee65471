"""Layer 4, resources: Pulumi ComponentResources, usable from the stack program and from your own Pulumi program
(docs/library.md). Each registers exactly the manifests the model assembled for it and adds only lifecycle (parent,
aliases, depends_on, replace_on_changes, retain_on_delete); none reads config, the environment or a cluster, and
none builds a manifest dict of its own.

Every component is `Component(name, ComponentArgs(...), opts=None)`: the Args are frozen dataclasses whose fields
document what happens when they are omitted; the fields a program fills from other resources take `pulumi.Input`
(namespace names, the checkpoint StorageClass, the trainer image, a model's storage URI); the kubernetes provider
goes through `opts` (`pulumi.ResourceOptions(provider=...)`), as for any Pulumi component. Type tokens are
`kueue-cohorts:<module>:<Name>`.

- ``judged``: ``JudgedStack`` (a stack's Settings plus Outputs, judged by the settings check with a stand-in per
  Output, registered as the resolved stack renders) and ``InvalidStack``;
- ``manifest``: one rendered object -> one Kubernetes resource (``ManifestResource``);
- ``layouts``: the two cohort layouts (``InferenceTrainingCohort``, ``SharedPoolCohort``);
- ``checkpoint``: the ReadWriteMany ``CheckpointVolume`` of a training namespace;
- ``training``: the ``PreemptibleTrainingRuntime`` and ``train_job``; ``inference``: KServe ``InferenceService``;
- ``kueue_install``: ``KueueInstallation`` (Kueue's Helm chart with the stack's manager Configuration);
- ``admission``: ``AdmissionGuardrails``; ``preview_identity``: ``PreviewIdentity``.
"""
from __future__ import annotations

from kueue_cohorts.components.resources.admission import AdmissionGuardrails, AdmissionGuardrailsArgs
from kueue_cohorts.components.resources.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from kueue_cohorts.components.resources.inference import InferenceService, InferenceServiceArgs
from kueue_cohorts.components.resources.judged import InvalidStack, JudgedStack
from kueue_cohorts.components.resources.kueue_install import ChartReference, KueueInstallation, KueueInstallationArgs
from kueue_cohorts.components.resources.layouts import (
    InferenceTrainingCohort,
    InferenceTrainingCohortArgs,
    SharedPoolCohort,
    SharedPoolCohortArgs,
)
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.resources.preview_identity import PreviewIdentity, PreviewIdentityArgs
from kueue_cohorts.components.resources.training import (
    PreemptibleTrainingRuntime,
    PreemptibleTrainingRuntimeArgs,
    TrainJobArgs,
    train_job,
)

__all__ = [
    "AdmissionGuardrails", "AdmissionGuardrailsArgs", "ChartReference", "CheckpointVolume", "CheckpointVolumeArgs",
    "InferenceService", "InferenceServiceArgs", "InferenceTrainingCohort", "InferenceTrainingCohortArgs",
    "InvalidStack", "JudgedStack", "KueueInstallation", "KueueInstallationArgs", "ManifestResource",
    "PreemptibleTrainingRuntime", "PreemptibleTrainingRuntimeArgs", "PreviewIdentity", "PreviewIdentityArgs",
    "SharedPoolCohort", "SharedPoolCohortArgs", "TrainJobArgs", "train_job",
]
