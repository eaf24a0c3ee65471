"""Layer 1, settings: the stack config (`kueue-cohorts:*`) -> one frozen, typed `Settings`, or one `SettingsError`.

Shape only: pydantic parses every key (types, DNS-1123 names, Kueue's case-sensitive enums, quantities, unknown keys
with a did-you-mean); the cross-field rules live in `components.checks`. Nothing here reads `pulumi.Config`, the
environment or a cluster, and nothing here imports a later layer (`model`, `checks`, `resources`, `stack`).

One module per section of the stack file, the way Kueue keeps one `<kind>_types.go` per kind:

- `base`: the project name, constrained scalar types (DNS labels, resource names, quantities, Go durations, label
  keys and selectors), the shared pydantic `Model`, Kueue's enums;
- `cluster`: `cluster.*` and `nodePools` (capacity); `flavors`: ResourceFlavors and flavor quotas;
- `queues`: preemption, WorkloadPriorityClasses, checkpoint plan; `services`: InferenceServices and their rollout;
- `asymmetric` (`inferenceTraining`) and `symmetric` (`sharedPool`): the two cohort layouts;
- `kueue`: Kueue itself; `admission`: the in-cluster guardrails and add-on namespaces; `preview`: the PR preview
  identity; `whatif`: the pull-request summary's demand trace; `multikueue`: the worker clusters and the
  ClusterQueues that dispatch to them; `root`: `Settings`; `load`: raw keys -> `Settings` with every problem's key
  path;
- beside them: `runtime` (`trainingRuntime`), `checkpoint_timing` (save interval and grace arithmetic),
  `quantity` (Kubernetes quantities), `secrets`, `stackfile` (the one stack-file reader), `errors` (`Problem`,
  `SettingsError`).

Tools import the public names from here (`from components.settings import Settings`), never a private module name.
"""
from __future__ import annotations

from kueue_cohorts.components.settings.admission import (
    SANDBOX_ADMIN,
    AddOnNamespaceAllowance,
    AdmissionSettings,
    StackIdentities,
    ValidationAction,
)
from kueue_cohorts.components.settings.asymmetric import (
    InferenceQueueSettings,
    InferenceTrainingSettings,
    TrainingQueueSettings,
)
from kueue_cohorts.components.settings.base import (
    PROJECT,
    BorrowWithinCohortPolicy,
    ClusterMode,
    DnsLabel,
    DnsSubdomain,
    FlavorFungibilityPolicy,
    GoDuration,
    LabelKey,
    LabelSelector,
    Model,
    NamespacePolicy,
    Quantity,
    QueueingStrategy,
    ReclaimWithinCohort,
    ResourceList,
    ResourceName,
    Selecting,
    Selects,
    StopPolicy,
    WithinClusterQueue,
    inside_repository,
)
from kueue_cohorts.components.settings.cluster import (
    CLIENT_LIMIT_MAX,
    ClusterSettings,
    KubeClientSettings,
    NodePool,
    Taint,
    Toleration,
)
from kueue_cohorts.components.settings.flavors import (
    FlavorDeclaration,
    FlavorFungibility,
    FlavorQuota,
    ResourceFlavorSettings,
)
from kueue_cohorts.components.settings.kueue import (
    DEFAULT_FRAMEWORKS,
    KUEUE_FRAMEWORKS,
    ChartSource,
    KueueMetrics,
    KueueResources,
    KueueSettings,
    LocalQueueMetrics,
    RequeuingStrategy,
    WaitForPodsReady,
)
from kueue_cohorts.components.settings.load import (
    config_key,
    config_keys,
    namespace_problems,
    parse_settings,
    raw_from_stack_file,
    stack_key,
)
from kueue_cohorts.components.settings.monitoring import (
    RUNBOOK_URL,
    MonitoringSettings,
    PositiveDuration,
)
from kueue_cohorts.components.settings.multikueue import (
    ManagerTrainer,
    MultiKueueDispatch,
    MultiKueueSettings,
    MultiKueueWorker,
    WorkerSecret,
)
from kueue_cohorts.components.settings.preview import (
    PreviewIdentityCreate,
    PreviewIdentitySettings,
    PreviewSubjectKind,
)
from kueue_cohorts.components.settings.queues import (
    BorrowWithinCohort,
    CheckpointSettings,
    Preemption,
    PriorityClass,
)
from kueue_cohorts.components.settings.root import (
    Settings,
    training_covered,
)
from kueue_cohorts.components.settings.selecting import (
    LIST,
    MAPPING,
    KeyPath,
    key_text,
    selecting_keys,
)
from kueue_cohorts.components.settings.services import (
    InferenceServiceSettings,
    IntOrPercent,
    RolloutSettings,
)
from kueue_cohorts.components.settings.symmetric import (
    SharedPoolSettings,
    TenantSettings,
)
from kueue_cohorts.components.settings.whatif import WhatIfSettings

__all__ = [
    "RUNBOOK_URL",
    "MonitoringSettings",
    "PositiveDuration",
    "LocalQueueMetrics",
    "KueueMetrics",
    "PROJECT",
    "DnsLabel",
    "DnsSubdomain",
    "ResourceName",
    "Quantity",
    "ResourceList",
    "Model",
    "ReclaimWithinCohort",
    "WithinClusterQueue",
    "BorrowWithinCohortPolicy",
    "QueueingStrategy",
    "StopPolicy",
    "FlavorFungibilityPolicy",
    "ClusterMode",
    "NamespacePolicy",
    "GoDuration",
    "LabelKey",
    "LabelSelector",
    "CLIENT_LIMIT_MAX",
    "KubeClientSettings",
    "ClusterSettings",
    "NodePool",
    "Taint",
    "Toleration",
    "ResourceFlavorSettings",
    "FlavorDeclaration",
    "FlavorFungibility",
    "FlavorQuota",
    "BorrowWithinCohort",
    "Preemption",
    "PriorityClass",
    "CheckpointSettings",
    "IntOrPercent",
    "RolloutSettings",
    "InferenceServiceSettings",
    "InferenceQueueSettings",
    "TrainingQueueSettings",
    "InferenceTrainingSettings",
    "TenantSettings",
    "SharedPoolSettings",
    "KUEUE_FRAMEWORKS",
    "DEFAULT_FRAMEWORKS",
    "RequeuingStrategy",
    "WaitForPodsReady",
    "KueueResources",
    "ChartSource",
    "KueueSettings",
    "SANDBOX_ADMIN",
    "ValidationAction",
    "StackIdentities",
    "AdmissionSettings",
    "AddOnNamespaceAllowance",
    "MultiKueueSettings",
    "ManagerTrainer",
    "MultiKueueWorker",
    "MultiKueueDispatch",
    "WorkerSecret",
    "PreviewSubjectKind",
    "PreviewIdentityCreate",
    "PreviewIdentitySettings",
    "WhatIfSettings",
    "training_covered",
    "Settings",
    "config_key",
    "stack_key",
    "parse_settings",
    "namespace_problems",
    "raw_from_stack_file",
    "config_keys",
    "Selecting",
    "Selects",
    "inside_repository",
    "LIST",
    "MAPPING",
    "KeyPath",
    "key_text",
    "selecting_keys",
]
