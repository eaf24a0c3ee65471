"""Layer 2, model: pure functions from validated ``Settings`` to the stack's objects. No Pulumi here.

- ``kueue``: typed Kueue objects (kueue.x-k8s.io/v1beta2: ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
  WorkloadPriorityClass) and their manifests, in Kueue's exact JSON field names;
- ``plans``: the two cohort layouts (asymmetric inference/training, symmetric shared pool) as typed objects;
- ``runtime``: the PreemptibleTrainingRuntime (Kubeflow Trainer v2 TrainingRuntime, its trainer ConfigMap) and
  TrainJobs; ``services``: KServe InferenceServices (serving.kserve.io/v1beta1) queued to Kueue;
- ``manager_config``: Kueue's manager Configuration (config.kueue.x-k8s.io/v1beta2) and the chart values carrying it;
- ``render``: every object of the stack as a manifest dict with the config keys its fields come from;
- ``admission``: the in-cluster guardrails (ValidatingAdmissionPolicies and bindings);
- ``preview_rbac``: the read-only RBAC of the pull-request preview identity;
- ``pack_config``: the policy pack config generated from the stack;
- ``assembly``: the one assembler: the whole stack as the program registers it, object by object.

Everything the checks judge and everything ``components.resources`` registers comes from ``assembly.assemble``.
"""
from __future__ import annotations

from kueue_cohorts.components.model.assembly import AssembledStack, assemble
from kueue_cohorts.components.model.render import Rendered, RenderedLayout, RenderedStack, render, render_stack

__all__ = ["AssembledStack", "Rendered", "RenderedLayout", "RenderedStack", "assemble", "render", "render_stack"]
