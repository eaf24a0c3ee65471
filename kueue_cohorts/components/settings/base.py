"""Shared building blocks of the stack config schema: the project name, constrained scalar types, the pydantic
base `Model` (frozen, camelCase aliases, unknown keys refused) and Kueue's case-sensitive enums.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
)
from pydantic.alias_generators import to_camel

from kueue_cohorts.components.settings import quantity
from kueue_cohorts.components.settings.runtime import (
    CONFIG_KEY,
    DNS_SUBDOMAIN,
    RECIPE,
)
from kueue_cohorts.policy.rules.vocabulary import durations, selectors

PROJECT = "kueue-cohorts"

# --- constrained scalar types ---------------------------------------------------------------------------------------

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = DNS_SUBDOMAIN

_DNS_FIX = "lower-case letters, digits and '-', starting and ending with a letter or digit"
_PATTERNS = {
    _DNS_LABEL: ("must be a DNS-1123 label (RFC 1123, at most 63 characters)", f"use {_DNS_FIX}"),
    _DNS_SUBDOMAIN: ("must be a DNS-1123 subdomain (RFC 1123)", f"use {_DNS_FIX}, dot-separated"),
    CONFIG_KEY: ("must be a Secret or ConfigMap key (Kubernetes IsConfigMapKey): letters, digits, '-', '_' or '.'",
                 "use the key's name as it appears in the Secret's data, e.g. token"),
}

DnsLabel = Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)]
"""A DNS-1123 label (namespaces, LocalQueues): lower-case alphanumerics and '-', at most 63 characters."""

DnsSubdomain = Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253)]
"""A DNS-1123 subdomain (ClusterQueues, cohorts, ResourceFlavors, WorkloadPriorityClasses)."""

_RESOURCE_NAME = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
ResourceName = Annotated[str, Field(pattern=_RESOURCE_NAME)]
"""A Kubernetes resource name such as `cpu`, `memory`, `nvidia.com/gpu` or `nvidia.com/gpumem`."""


Quantity = quantity.Quantity

ResourceList = dict[ResourceName, Quantity]
"""Resource name -> quantity, e.g. {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}."""


class Model(BaseModel):
    """Base of every settings model: frozen, unknown keys refused, camelCase keys as in Kueue's API."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, use_enum_values=False,
        use_attribute_docstrings=True,
    )


# --- keys that select something outside the stack file ---------------------------------------------------------------


class Selects(str, Enum):
    """What a stack-file key selects outside the stack file itself: the kind of a `Selecting` marker.

    A key of this kind steers what the machine running the deploy reads, runs or reaches, so the live preview of a
    pull request (`python -m kueue_cohorts.deploy preview --pull-request FILE`, deploy/pullrequest.py) never takes it
    from the
    pull request: it pins every such key to the base branch's value (or removes it, leaving the job's own default).
    """

    TARGET = "target"          # which cluster the client targets: cluster mode (the sandbox's kubeconfig or a file)
    KUBECONFIG = "kubeconfig"  # a kubeconfig file: it names a server, a credential and possibly a program (exec)
    CONTEXT = "context"        # a kubeconfig context: which cluster and user of the file
    PATH = "path"              # any other file or directory of the machine, read or written
    PROGRAM = "program"        # where code the deploy renders or runs comes from (the Kueue chart's source)


@dataclass(frozen=True)
class Selecting:
    """Field marker (pydantic `Annotated` metadata) of a settings key that selects a file, a context, a program or
    a credential source (`Selects`). `components.settings.selecting.selecting_keys` enumerates them from the schema;
    a test refuses a path-like key without one."""

    what: Selects


SELECTS_TARGET = Selecting(Selects.TARGET)
SELECTS_KUBECONFIG = Selecting(Selects.KUBECONFIG)
SELECTS_CONTEXT = Selecting(Selects.CONTEXT)
SELECTS_PATH = Selecting(Selects.PATH)
SELECTS_PROGRAM = Selecting(Selects.PROGRAM)


def inside_repository(text: str) -> str:
    """Return `text` when it is a path that stays inside the project root however it is joined to it: relative,
    POSIX separators, no `..`, `.` or empty component, no `~` (the shell's home), no control character. This is
    the lexical half of the rule; whoever opens the file does so below the root without following links
    (deploy/pullrequest.py `read_inside`).

    Raises:
        ValueError: why the path could leave the root, with the fix (pydantic reports it at the key).
    """
    if (text.startswith(("/", "~")) or "\\" in text or any(ord(c) < 32 or ord(c) == 127 for c in text)
            or any(part in ("", ".", "..") for part in text.split("/"))):
        raise ValueError("must be a path inside the repository: relative, '/'-separated, without '..', '.', empty "
                         "components, '~', backslashes or control characters Fix: write it relative to the project "
                         "root, e.g. traces/staging.jsonl")
    return text


# --- enums (Kueue's are case-sensitive) ------------------------------------------------------------------------------


class ReclaimWithinCohort(str, Enum):
    """ClusterQueue `spec.preemption.reclaimWithinCohort` (kueue.x-k8s.io/v1beta2 ClusterQueuePreemption)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    ANY = "Any"


class WithinClusterQueue(str, Enum):
    """ClusterQueue `spec.preemption.withinClusterQueue`."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


class BorrowWithinCohortPolicy(str, Enum):
    """ClusterQueue `spec.preemption.borrowWithinCohort.policy`."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


class QueueingStrategy(str, Enum):
    """ClusterQueue `spec.queueingStrategy` (Kueue default BestEffortFIFO)."""

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class StopPolicy(str, Enum):
    """ClusterQueue / LocalQueue `spec.stopPolicy` (Kueue default None)."""

    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class FlavorFungibilityPolicy(str, Enum):
    """ClusterQueue `spec.flavorFungibility.whenCanBorrow` / `whenCanPreempt` (kueue.x-k8s.io/v1beta2
    FlavorFungibilityPolicy, clusterqueue_types.go v0.19.2)."""

    MAY_STOP_SEARCH = "MayStopSearch"  # stop at the first flavor where the workload fits by borrowing / preempting
    TRY_NEXT_FLAVOR = "TryNextFlavor"  # try the next flavor before borrowing / preempting in this one


class ClusterMode(str, Enum):
    """Where the kubernetes provider sends the stack's objects."""

    SANDBOX = "sandbox"        # the local sandbox (kueue-cohorts sandbox up); the dev default
    KUBECONFIG = "kubeconfig"  # a real cluster from a kubeconfig file and context
    RENDER = "render"          # no cluster: manifests written to renderDir (GitOps)


class NamespacePolicy(str, Enum):
    """What the layout does with the tenant namespaces that its LocalQueues live in."""

    CREATE = "Create"      # create the Namespace (labelled for the namespaceSelector, marked kueue-cohorts/owner)
    LABEL = "Label"        # the Namespace exists: only patch the selector label onto it (server-side apply)
    EXTERNAL = "External"  # someone else manages the Namespace and its label; nothing is created or patched


def _go_duration(text: str) -> str:
    try:
        durations.parse_go_duration(text)
    except ValueError as err:
        raise ValueError(f"must be a Go duration ({err}) Fix: write it with units ns, us, ms, s, m or h, such as "
                         "10m, 90s, 1h30m or .5m, at most 2562047h47m16.854775807s") from None
    return text


GoDuration = Annotated[str, AfterValidator(_go_duration)]
"""A Go duration such as "10m", "1h30m", "90s" or ".5m" (metav1.Duration), parsed exactly like Go's
time.ParseDuration (the rule book's `policy.rules.vocabulary.durations`), within Go's range."""


def _label_key(text: str) -> str:
    problem = selectors.label_key_problem(text)
    if problem:
        raise ValueError(f"{problem} Fix: use a label key such as kueue.x-k8s.io/queue (an optional DNS subdomain "
                         "prefix and '/', then at most 63 alphanumerics, '-', '_' or '.')")
    return text


LabelKey = Annotated[str, AfterValidator(_label_key)]
"""A Kubernetes label key (k8s.io/apimachinery IsQualifiedName), checked by the rule book's `selectors`."""


def _label_selector(value: dict[str, Any]) -> dict[str, Any]:
    problems = selectors.selector_problems(value)
    if problems:
        listed = "; ".join(f"{path or 'the selector'} {problem}" for path, problem in problems)
        raise ValueError(f"not a valid LabelSelector: {listed} Fix: write {{matchLabels: {{<key>: <value>}}}} and/or "
                         "{matchExpressions: [{key, operator: In|NotIn|Exists|DoesNotExist, values}]}")
    return value


LabelSelector = Annotated[dict[str, Any], AfterValidator(_label_selector)]
"""A metav1.LabelSelector as written (matchLabels, matchExpressions), checked by the rule book's `selectors`."""


_PATTERNS[_RESOURCE_NAME] = ("must be a Kubernetes resource name such as cpu or nvidia.com/gpu", "correct the name")
_PATTERNS[RECIPE] = (
    "must be a recipe: module:function, llamafactory:/<config>.yaml, training-hub:sft|osft[:/<params>.json] or "
    "mini-trainer:/<params>.json",
    "name a function returning a Hugging Face Trainer (e.g. trainer.demo:build_trainer) or a recipe family with an "
    "absolute path inside the image (trainer/RECIPES.md)",
)


