"""Every bad stack config fails with one message naming, per problem, the exact key, the value, the rule and its own
fix; nothing is registered."""
from __future__ import annotations

import json
import runpy
from typing import Callable

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings, validate
from kueue_cohorts.components.settings.errors import SettingsError
from tests.helpers import ROOT, fixture_raw, refused, stack_raw


def _dev() -> dict:
    return stack_raw("dev")


def _prod() -> dict:
    return stack_raw("prod")


def _pool() -> dict:
    return fixture_raw("guide-shared-pool")


def _mixed() -> dict:
    return stack_raw("mixed")


H100_LABELS = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def _set(path: str, value) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        node = raw
        parts = path.split("|")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is _DELETE:
            del node[parts[-1]]
        else:
            node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return mutate


_DELETE = object()
IT = "kueue-cohorts:inferenceTraining"
SP = "kueue-cohorts:sharedPool"

# (case id, base config, mutation, expected key, expected words in the rule)
CASES = [
    ("inference-borrowing-nonzero", _dev, _set("inferenceTraining|inference|borrowingLimit",
                                               {"nvidia.com/gpualloc": "1"}),
     f'{IT}.inference.borrowingLimit["nvidia.com/gpualloc"]', "must never borrow"),
    ("inference-reclaim-lower", _dev, _set("inferenceTraining|inference|preemption|reclaimWithinCohort",
                                           "LowerPriority"),
     f"{IT}.inference.preemption.reclaimWithinCohort", "reclaim"),
    ("nominal-above-capacity", _dev, _set("nodePools|0|capacity|nvidia.com/gpucores", "10"),
     f'{IT}.inference.nominalQuota["nvidia.com/gpucores"]', "above the 10 of the nodes it selects"),
    ("cohort-quota-counts-toward-capacity", _dev, _set("inferenceTraining|cohortQuota", {"nvidia.com/gpualloc": "1"}),
     f'{IT}.cohortQuota["nvidia.com/gpualloc"]', "sums to 2"),
    ("capacity-undeclared", _dev, _set("nodePools|0|capacity", {"cpu": "8", "memory": "32Gi"}),
     f'{IT}.inference.nominalQuota["nvidia.com/gpualloc"]', "none of the nodes it selects (node pool 'gpu') declares"),
    # issue 26 promise 1: quota against the nodes each flavor selects by its nodeLabels, over every cohort
    ("flavor-labels-no-pool-carries", _prod, _set("resourceFlavor|nodeLabels", {"nvidia.com/gpu.product": "H200"}),
     "kueue-cohorts:resourceFlavor.nodeLabels", "which no node pool carries"),
    ("pool-without-the-flavors-labels", _prod, _set("nodePools|0|labels", _DELETE),
     "kueue-cohorts:resourceFlavor.nodeLabels", "which no node pool carries"),
    ("two-flavors-one-node-set", _mixed, _set("resourceFlavors|1|nodeLabels", H100_LABELS),
     f'{IT}.inference.flavors[0].nominalQuota["nvidia.com/gpu"]', "ResourceFlavors 'h100', 'a100' select the same"),
    ("pool-named-for-another-flavor", _mixed, lambda r: (
        r["nodePools"][1].update(labels=dict(H100_LABELS)),
        r["resourceFlavors"][1].update(nodeLabels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"})),
     "kueue-cohorts:resourceFlavors[1].nodeLabels", "node pool 'a100' names resourceFlavor 'a100' but lacks these"),
    ("layouts-fit-alone-not-together", _prod, _set("sharedPool|tenants|2|floor|nvidia.com/gpu", "5"),
     f'{IT}.inference.nominalQuota["nvidia.com/gpu"]', "sums to 33 of 'nvidia.com/gpu' (ClusterQueue "
     "'online-inference-cq' 16, ClusterQueue 'team-a-cq' 6, ClusterQueue 'team-b-cq' 6, ClusterQueue 'team-c-cq' 5)"),
    ("flavor-without-labels-or-pools", _mixed, lambda r: r["resourceFlavors"].append({"name": "l40s"}),
     "kueue-cohorts:resourceFlavors[2].nodeLabels", "select every node of the cluster"),
    ("inference-quota-on-cohort", _dev, lambda r: (
        r["inferenceTraining"]["inference"]["nominalQuota"].update({"nvidia.com/gpualloc": "0"}),
        r["inferenceTraining"].update({"cohortQuota": {"nvidia.com/gpualloc": "1"}})),
     f'{IT}.inference.nominalQuota["nvidia.com/gpualloc"]', "Cohort object"),
    ("inference-workload-too-big", _dev, _set("inferenceTraining|inference|services",
                                             [{"name": "big", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                               "requests": {"nvidia.com/gpucores": "50"}}]),
     f'{IT}.inference.services[0].requests["nvidia.com/gpucores"]', "can never be admitted"),
    ("training-priority-not-below", _dev, _set("inferenceTraining|training|priorityClass|value", 1000),
     f"{IT}.training.priorityClass.value", "below the inference priority"),
    ("undefined-priority-class", _dev, _set("inferenceTraining|inference|services",
                                           [{"name": "w", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                             "requests": {"cpu": "1"}, "priorityClass": "nope"}]),
     f"{IT}.inference.services[0].priorityClass", "does not define"),
    ("lending-above-nominal", _pool, _set("sharedPool|tenants|0|lendingLimit", {"nvidia.com/gpualloc": "3"}),
     f'{SP}.tenants[0].lendingLimit["nvidia.com/gpualloc"]', "cannot exceed the floor"),
    ("borrowing-beyond-pool", _pool, _set("sharedPool|tenants|0|borrowingLimit", {"nvidia.com/gpualloc": "5"}),
     f'{SP}.tenants[0].borrowingLimit["nvidia.com/gpualloc"]', "cannot exceed the pool total 6"),
    ("negative-quantity", _pool, _set("sharedPool|tenants|1|floor|nvidia.com/gpualloc", "-2"),
     f'{SP}.tenants[1].floor["nvidia.com/gpualloc"]', "must not be negative"),
    ("not-a-quantity", _pool, _set("sharedPool|tenants|1|floor|nvidia.com/gpualloc", "two"),
     f'{SP}.tenants[1].floor["nvidia.com/gpualloc"]', "not a Kubernetes quantity"),
    ("no-cohort", _pool, _set("sharedPool|cohort", _DELETE), f"{SP}.cohort", "Field required"),
    ("not-dns-1123", _dev, _set("inferenceTraining|inference|clusterQueue", "C12_Inference"),
     f"{IT}.inference.clusterQueue", "DNS-1123"),
    ("duplicate-tenant", _pool, lambda r: r["sharedPool"]["tenants"].append(
        {"name": "ns-a", "clusterQueue": "other-cq", "namespaces": ["other"], "floor": {"nvidia.com/gpualloc": "0"}}),
     f"{SP}.tenants[2].name", "the tenant label value 'ns-a' of namespaceLabel kueue.x-k8s.io/queue is already used"),
    ("duplicate-cluster-queue", _dev, _set("inferenceTraining|training|clusterQueue", "c12-inference-cq"),
     f"{IT}.training.clusterQueue", "the ClusterQueue name 'c12-inference-cq' is already used"),
    ("typo-key", _dev, _set("inferenceTraining|training|borowingLimit", {"cpu": "1"}),
     f"{IT}.training.borowingLimit", "unknown key (a typo?)"),
    ("typo-top-level-key", _dev, _set("inferenceTrainig", {}), "kueue-cohorts:inferenceTrainig", "unknown key"),
    ("enum-wrong-case", _dev, _set("inferenceTraining|training|preemption|withinClusterQueue", "lowerPriority"),
     f"{IT}.training.preemption.withinClusterQueue", "'LowerPriority'"),
    ("borrow-within-cohort-needs-reclaim", _pool, _set("sharedPool|preemption",
        {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}),
     f"{SP}.preemption.borrowWithinCohort.policy", "reclaimWithinCohort is Never"),
    ("floors-differ-in-resources", _pool, _set("sharedPool|tenants|0|floor|cpu", "1"),
     f'{SP}.tenants[1].floor.cpu', "same resources"),
    ("render-without-dir", _pool, _set("cluster|renderDir", _DELETE), "kueue-cohorts:cluster.renderDir", "render mode"),
    ("client-settings-in-render-mode", _pool, _set("cluster|kubeClientSettings", {"qps": 100}),
     "kueue-cohorts:cluster.kubeClientSettings", "only applies to an API server (mode is render)"),
    ("client-qps-zero-burst-fraction", _dev, _set("cluster|kubeClientSettings", {"qps": 0, "burst": 2.5}),
     "kueue-cohorts:cluster.kubeClientSettings.qps", "greater than or equal to 1"),
    # beyond int64 the engine hands the program a float (exit 1 inside the engine); near 2**63 the provider fails
    ("client-limits-beyond-the-provider", _dev, _set("cluster|kubeClientSettings", {"qps": 10**25, "burst": 2**63}),
     "kueue-cohorts:cluster.kubeClientSettings.qps", "less than or equal to 1000000"),
    ("manage-jobs-without-selector", _dev, _set("kueue", {"manageJobsWithoutQueueName": True}),
     "kueue-cohorts:kueue.managedJobsNamespaceSelector", "must exclude kube-system and Kueue's namespace"),
    ("manage-jobs-selector-keeps-kube-system", _dev, _set("kueue", {
        "manageJobsWithoutQueueName": True, "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kueue-system"]}]}}),
     "kueue-cohorts:kueue.managedJobsNamespaceSelector", "this selector selects 'kube-system'"),
    ("wait-for-pods-ready-needs-backoff-limit", _dev, _set("kueue", {"waitForPodsReady": {"timeout": "5m"}}),
     "kueue-cohorts:kueue.waitForPodsReady.requeuingStrategy", "Field required"),
    ("wait-for-pods-ready-bad-timeout", _dev, _set("kueue", {"waitForPodsReady": {
        "timeout": "5 minutes", "requeuingStrategy": {"backoffLimitCount": 3}}}),
     "kueue-cohorts:kueue.waitForPodsReady.timeout", "must be a Go duration (time: unknown unit"),
    ("negative-recovery-timeout", _dev, _set("kueue", {"waitForPodsReady": {
        "timeout": "5m", "recoveryTimeout": "-1m", "requeuingStrategy": {"backoffLimitCount": 3}}}),
     "kueue-cohorts:kueue.waitForPodsReady.recoveryTimeout", "'-1m' is negative, and Kueue's manager refuses to start"),
    ("unknown-integration", _dev, _set("kueue", {"integrations": ["batch/job", "kserve"]}),
     "kueue-cohorts:kueue.integrations[1]", "not a Kueue integration"),
    ("runtime-asks-more-than-training-can-borrow", _dev, _set("trainingRuntime|limits", {
        "cpu": "2", "memory": "4Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "50",
        "nvidia.com/gpumem": "4096"}),
     'kueue-cohorts:trainingRuntime.limits["nvidia.com/gpucores"]', "Kueue can never admit a TrainJob"),
    ("runtime-without-checkpoint", _dev, _set("inferenceTraining|training|checkpoint", _DELETE),
     "kueue-cohorts:trainingRuntime", "mounts their checkpoint PVC"),
    ("guide-pool-without-cpu-memory", _pool, _set("kueue", _DELETE),
     f'{SP}.tenants[0].floor', "every pod requests cpu and memory"),
    # issue 13: each input below once got through, or crashed the check
    ("system-namespace-as-tenant", _prod, _set("inferenceTraining|training|namespaces",
                                               ["training-prod", "kube-system"]),
     f"{IT}.training.namespaces[1]", "'kube-system' is a protected system or controller namespace"),
    ("kueues-namespace-as-tenant", _dev, _set("inferenceTraining|training|namespaces",
                                              ["c12-training", "kueue-system"]),
     f"{IT}.training.namespaces[1]", "'kueue-system' is a protected"),
    ("extra-protected-namespace", _dev, lambda r: r.update(protectedNamespaces=["c12-training"]),
     f"{IT}.training.namespaces[0]", "'c12-training' is a protected"),
    ("two-queues-one-tenant-label", _dev, _set("inferenceTraining|training|tenant", "c12-inference-cq"),
     f"{IT}.training.tenant", "the tenant label value 'c12-inference-cq' of namespaceLabel kueue.x-k8s.io/queue is "
                              "already used"),
    ("half-a-gpu-nominal", _dev, _set("inferenceTraining|inference|nominalQuota|nvidia.com/gpualloc", "1.5"),
     f'{IT}.inference.nominalQuota["nvidia.com/gpualloc"]', "accepts only in whole numbers"),
    ("half-a-gpu-node", _dev, _set("nodePools|0|capacity|nvidia.com/gpualloc", "1.5"),
     'kueue-cohorts:nodePools[0].capacity["nvidia.com/gpualloc"]', "accepts only in whole numbers"),
    ("half-a-gpu-floor", _pool, _set("sharedPool|tenants|0|floor|nvidia.com/gpualloc", "1500m"),
     f'{SP}.tenants[0].floor["nvidia.com/gpualloc"]', "accepts only in whole numbers"),
    ("half-a-gpu-service", _dev, _set("inferenceTraining|inference|services", [
        {"name": "s", "modelFormat": "hf", "storageUri": "pvc://m", "requests": {"nvidia.com/gpualloc": "0.5"}}]),
     f'{IT}.inference.services[0].requests["nvidia.com/gpualloc"]', "accepts only in whole numbers"),
    ("limits-only-service", _dev, _set("inferenceTraining|inference|services", [
        {"name": "s", "modelFormat": "hf", "storageUri": "pvc://m", "requests": {"cpu": "1", "memory": "2Gi"},
         "limits": {"nvidia.com/gpualloc": "2", "ephemeral-storage": "10Gi"}}]),
     f'{IT}.inference.services[0].limits["nvidia.com/gpualloc"]', "one replica asks for 2"),
    ("zero-timeout", _dev, _set("kueue", {"waitForPodsReady": {"timeout": "0s",
                                                               "requeuingStrategy": {"backoffLimitCount": 3}}}),
     "kueue-cohorts:kueue.waitForPodsReady.timeout", "is not positive"),
    ("timeout-beyond-go", _dev, _set("kueue", {"waitForPodsReady": {"timeout": "9999999h",
                                                                    "requeuingStrategy": {"backoffLimitCount": 3}}}),
     "kueue-cohorts:kueue.waitForPodsReady.timeout", 'time: invalid duration "9999999h"'),
    ("selector-labels-not-a-map", _dev, _set("kueue", {"manageJobsWithoutQueueName": True,
                                                      "managedJobsNamespaceSelector": {"matchLabels": "yes"}}),
     "kueue-cohorts:kueue.managedJobsNamespaceSelector", "matchLabels must be a map"),
    ("selector-a-list", _dev, _set("kueue", {"manageJobsWithoutQueueName": True,
                                             "managedJobsNamespaceSelector": ["oops"]}),
     "kueue-cohorts:kueue.managedJobsNamespaceSelector", "valid dictionary"),
    ("namespace-label-not-a-label-key", _dev, _set("inferenceTraining|namespaceLabel", "not a label!"),
     f"{IT}.namespaceLabel", "label key"),
    ("nan-quantity", _dev, _set("inferenceTraining|inference|nominalQuota|cpu", "NaN"),
     f"{IT}.inference.nominalQuota.cpu", "not a Kubernetes quantity"),
    ("infinite-quantity", _dev, _set("inferenceTraining|inference|nominalQuota|cpu", "Infinity"),
     f"{IT}.inference.nominalQuota.cpu", "not a Kubernetes quantity"),
    ("huge-quantity", _dev, _set("inferenceTraining|inference|nominalQuota|cpu", "1e999999"),
     f"{IT}.inference.nominalQuota.cpu", "not a Kubernetes quantity"),
    ("no-layout", _dev, _set("inferenceTraining", _DELETE), "kueue-cohorts:inferenceTraining", "at least one"),
]


#: A protected namespace (kube-system, kueue-system, ...) as the second training namespace: the same three fixes.
PROTECTED_NAMES = ("kube-system, kube-public, kube-node-lease, kueue-system, jobset-system, kubeflow-system, kserve, "
                   "default")
ADD_ONS = (", every kube-* name and the cluster add-ons' namespaces (gpu-operator, cert-manager, ...; "
           "allowedAddOnNamespaces allows one with a reason)")
KEEP_OUT = "keep system and controller namespaces out of the tenants: list only your workload namespaces (protected: "
PIN = ("pin the tenants by name with matchExpressions [{key: kubernetes.io/metadata.name, operator: In, values: "
       "[<your namespaces>]}] and ")


def _protected_fixes(key: str, extra: str = "") -> list[tuple[str, str]]:
    """The three fixes of a protected namespace as a tenant (Namespace label, ClusterQueue selector, LocalQueue)."""
    names = PROTECTED_NAMES + extra + ADD_ONS + ")"
    return [(f"{key}[{{i}}]", f"remove the label and {KEEP_OUT}{names}"),
            (key, f"{PIN}{KEEP_OUT}{names}"),
            (f"{key}[{{i}}]", f"{KEEP_OUT}{names}")]


PROTECTED_TENANT_FIXES = [(k.replace("{i}", "1"), fix) for k, fix in
                          _protected_fixes("kueue-cohorts:inferenceTraining.training.namespaces")]

# Every problem of each case, in order: its exact key path (list indexes included) and its own fix.
EXPECTED = {
    'inference-borrowing-nonzero': [
        ('kueue-cohorts:inferenceTraining.inference.borrowingLimit["nvidia.com/gpualloc"]',
         'set borrowingLimit to 0 (or leave it out of the stack config: the component writes 0)'),
    ],
    'inference-reclaim-lower': [
        ('kueue-cohorts:inferenceTraining.inference.preemption.reclaimWithinCohort',
         'set reclaimWithinCohort to Any'),
    ],
    'nominal-above-capacity': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpucores"]',
         "lower the nominalQuota of 'nvidia.com/gpucores' in flavor 'c12-default' to at most 10 in total over every "
         "cohort, or add nodes"),
        # issue 37 class 1: the runtime's trainer pod asks for the whole slice (20 gpucores) on one 10-core node
        ('kueue-cohorts:trainingRuntime.limits["nvidia.com/gpucores"]',
         "request at most 10 of 'nvidia.com/gpucores' per pod (split the work over more pods), or add a node pool "
         "whose nodes have 20 of 'nvidia.com/gpucores' and carry the nodeLabels of flavor 'c12-default'"),
    ],
    'cohort-quota-counts-toward-capacity': [
        ('kueue-cohorts:inferenceTraining.cohortQuota["nvidia.com/gpualloc"]',
         "lower the nominalQuota of 'nvidia.com/gpualloc' in flavor 'c12-default' to at most 1 in total over every "
         "cohort, or add nodes"),
    ],
    'capacity-undeclared': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpualloc"]',
         "add 'nvidia.com/gpualloc' to the capacity of node pool 'gpu' (kueue-cohorts:nodePools), or drop the "
         "resource from the quota"),
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpucores"]',
         "add 'nvidia.com/gpucores' to the capacity of node pool 'gpu' (kueue-cohorts:nodePools), or drop the "
         "resource from the quota"),
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpumem"]',
         "add 'nvidia.com/gpumem' to the capacity of node pool 'gpu' (kueue-cohorts:nodePools), or drop the "
         "resource from the quota"),
    ],
    'flavor-labels-no-pool-carries': [
        ('kueue-cohorts:resourceFlavor.nodeLabels',
         "put the labels nvidia.com/gpu.product=H200 on the node pool of those nodes (kueue-cohorts:nodePools[]"
         ".labels), or set the flavor's nodeLabels to labels its nodes carry"),
    ],
    'pool-without-the-flavors-labels': [
        ('kueue-cohorts:resourceFlavor.nodeLabels',
         "put the labels nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 on the node pool of those nodes "
         "(kueue-cohorts:nodePools[].labels), or set the flavor's nodeLabels to labels its nodes carry"),
    ],
    'two-flavors-one-node-set': [
        ('kueue-cohorts:inferenceTraining.inference.flavors[0].nominalQuota["nvidia.com/gpu"]',
         "lower the nominalQuota of 'nvidia.com/gpu' in flavors 'h100', 'a100' to at most 2 together, or give each "
         "flavor nodeLabels that select nodes of its own"),
    ],
    'pool-named-for-another-flavor': [
        ('kueue-cohorts:resourceFlavors[1].nodeLabels',
         "put the labels nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB on the node pool of those nodes "
         "(kueue-cohorts:nodePools[].labels), or set the flavor's nodeLabels to labels its nodes carry"),
    ],
    'layouts-fit-alone-not-together': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpu"]',
         "lower the nominalQuota of 'nvidia.com/gpu' in flavor 'h100' to at most 32 in total over every cohort, or "
         "add nodes that carry its nodeLabels"),
    ],
    'flavor-without-labels-or-pools': [
        ('kueue-cohorts:resourceFlavors[2].nodeLabels',
         "write the nodeLabels of the 'l40s' nodes, or set resourceFlavor: l40s on node pools that carry a common "
         "label"),
    ],
    'inference-quota-on-cohort': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpualloc"]',
         'move the quota from cohortQuota to inference.nominalQuota'),
        ('kueue-cohorts:trainingRuntime.limits["nvidia.com/gpualloc"]',
         "lower it to at most 0 per node, or raise the training ClusterQueue's borrowingLimit (within the cohort's "
         "capacity)"),
    ],
    'inference-workload-too-big': [
        ('kueue-cohorts:inferenceTraining.inference.services[0].requests["nvidia.com/gpucores"]',
         'request at most 20 per replica, or raise the nominalQuota'),
    ],
    'training-priority-not-below': [
        ('kueue-cohorts:inferenceTraining.training.priorityClass.value',
         'set it below 1000 (the guide uses 10 against 1000)'),
    ],
    'undefined-priority-class': [
        ('kueue-cohorts:inferenceTraining.inference.services[0].priorityClass',
         "use one of 'c12-inference-prio', 'c12-training-prio'"),
    ],
    'lending-above-nominal': [
        ('kueue-cohorts:sharedPool.tenants[0].lendingLimit["nvidia.com/gpualloc"]',
         'lower it to at most 2'),
    ],
    'borrowing-beyond-pool': [
        ('kueue-cohorts:sharedPool.tenants[0].borrowingLimit["nvidia.com/gpualloc"]',
         'lower it to at most 4 (pool total minus floor), or omit it for that default'),
    ],
    'negative-quantity': [
        ('kueue-cohorts:sharedPool.tenants[1].floor["nvidia.com/gpualloc"]',
         'write a non-negative Kubernetes quantity such as 4, "500m" or "8Gi"'),
    ],
    'not-a-quantity': [
        ('kueue-cohorts:sharedPool.tenants[1].floor["nvidia.com/gpualloc"]',
         'write a non-negative Kubernetes quantity such as 4, "500m" or "8Gi"'),
    ],
    'no-cohort': [
        ('kueue-cohorts:sharedPool.cohort',
         'add the key'),
    ],
    'not-dns-1123': [
        ('kueue-cohorts:inferenceTraining.inference.clusterQueue',
         "use lower-case letters, digits and '-', starting and ending with a letter or digit, dot-separated"),
    ],
    'duplicate-tenant': [
        ('kueue-cohorts:sharedPool.tenants[2].name',
         'give each ClusterQueue its own tenant value (two ClusterQueues selecting the same tenant label would share '
         'its namespaces)'),
    ],
    'duplicate-cluster-queue': [
        ('kueue-cohorts:inferenceTraining.training.clusterQueue',
         'rename one of the ClusterQueues'),
        ('kueue-cohorts:inferenceTraining.training.clusterQueue',
         'give each ClusterQueue its own tenant value (two ClusterQueues selecting the same tenant label would share '
         'its namespaces)'),
    ],
    'typo-key': [
        ('kueue-cohorts:inferenceTraining.training.borowingLimit',
         "did you mean 'borrowingLimit'? Rename the key"),
    ],
    'typo-top-level-key': [
        ('kueue-cohorts:inferenceTrainig',
         "did you mean 'inferenceTraining'? Rename the key"),
    ],
    'enum-wrong-case': [
        ('kueue-cohorts:inferenceTraining.training.preemption.withinClusterQueue',
         "use exactly one of the allowed values (Kueue's enums are case-sensitive)"),
    ],
    'borrow-within-cohort-needs-reclaim': [
        ('kueue-cohorts:sharedPool.preemption.borrowWithinCohort.policy',
         'set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never'),
    ],
    'floors-differ-in-resources': [
        ('kueue-cohorts:sharedPool.tenants[1].floor.cpu',
         "add 'cpu': 0 to this tenant's floor"),
        # the guide's pool excludes cpu from Kueue's accounting, so a cpu floor is quota out of play
        ('kueue-cohorts:kueue.resources.excludeResourcePrefixes',
         "remove the entry that drops or replaces 'cpu', or take 'cpu' out of these queues' quota"),
    ],
    'render-without-dir': [
        ('kueue-cohorts:cluster.renderDir',
         'set renderDir (relative to the project root)'),
    ],
    'client-settings-in-render-mode': [
        ('kueue-cohorts:cluster.kubeClientSettings',
         'remove kubeClientSettings or set mode: sandbox or kubeconfig'),
    ],
    'client-qps-zero-burst-fraction': [
        ('kueue-cohorts:cluster.kubeClientSettings.qps', 'raise the value'),
        ('kueue-cohorts:cluster.kubeClientSettings.burst', 'write a whole number'),
    ],
    'client-limits-beyond-the-provider': [
        ('kueue-cohorts:cluster.kubeClientSettings.qps', 'lower the value'),
        ('kueue-cohorts:cluster.kubeClientSettings.burst', 'lower the value'),
    ],
    'manage-jobs-without-selector': [
        ('kueue-cohorts:kueue.managedJobsNamespaceSelector',
         'add managedJobsNamespaceSelector {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, '
         'values: [kube-system, kueue-system]}]}, or set manageJobsWithoutQueueName to false'),
    ],
    'manage-jobs-selector-keeps-kube-system': [
        ('kueue-cohorts:kueue.managedJobsNamespaceSelector',
         'exclude them, e.g. {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: '
         '[kube-system, kueue-system]}]}, or use an opt-in selector'),
    ],
    'wait-for-pods-ready-needs-backoff-limit': [
        ('kueue-cohorts:kueue.waitForPodsReady.requeuingStrategy',
         'add the key'),
    ],
    'wait-for-pods-ready-bad-timeout': [
        ('kueue-cohorts:kueue.waitForPodsReady.timeout',
         'write it with units ns, us, ms, s, m or h, such as 10m, 90s, 1h30m or .5m, at most 2562047h47m16.854775807s'),
    ],
    'unknown-integration': [
        ('kueue-cohorts:kueue.integrations[1]',
         'use one of batch/job, kubeflow.org/mpijob, ray.io/rayjob, ray.io/rayservice, ray.io/raycluster, '
         'jobset.x-k8s.io/jobset, kubeflow.org/paddlejob, kubeflow.org/pytorchjob, kubeflow.org/tfjob, '
         'kubeflow.org/xgboostjob, kubeflow.org/jaxjob, trainer.kubeflow.org/trainjob, '
         'workload.codeflare.dev/appwrapper, sparkoperator.k8s.io/sparkapplication, pod, deployment, statefulset, '
         'leaderworkerset.x-k8s.io/leaderworkerset'),
        # the rule book's model of what Kueue counts: the stack's kinds need their frameworks
        ('kueue-cohorts:kueue.integrations',
         "add 'deployment' to integrations.frameworks (the stack's kueue.integrations)"),
        ('kueue-cohorts:kueue.integrations',
         "add 'trainer.kubeflow.org/trainjob' to integrations.frameworks (the stack's kueue.integrations)"),
        ('kueue-cohorts:kueue.integrations',
         "use one of ['batch/job', 'deployment', 'jobset.x-k8s.io/jobset', 'kubeflow.org/jaxjob', "
         "'kubeflow.org/mpijob', 'kubeflow.org/paddlejob', 'kubeflow.org/pytorchjob', 'kubeflow.org/tfjob', "
         "'kubeflow.org/xgboostjob', 'leaderworkerset.x-k8s.io/leaderworkerset', 'pod', 'ray.io/raycluster', "
         "'ray.io/rayjob', 'ray.io/rayservice', 'sparkoperator.k8s.io/sparkapplication', 'statefulset', "
         "'trainer.kubeflow.org/trainjob', 'workload.codeflare.dev/appwrapper']"),
    ],
    'runtime-asks-more-than-training-can-borrow': [
        ('kueue-cohorts:trainingRuntime.limits["nvidia.com/gpucores"]',
         "lower it to at most 20 per node, or raise the training ClusterQueue's borrowingLimit (within the cohort's "
         "capacity)"),
        ('kueue-cohorts:trainingRuntime.limits["nvidia.com/gpumem"]',
         "lower it to at most 2048 per node, or raise the training ClusterQueue's borrowingLimit (within the cohort's "
         "capacity)"),
    ],
    'runtime-without-checkpoint': [
        ('kueue-cohorts:trainingRuntime',
         'add inferenceTraining.training.checkpoint (claimName, storageClassName, size), or remove trainingRuntime'),
    ],
    'guide-pool-without-cpu-memory': [
        ('kueue-cohorts:sharedPool.tenants[0].floor',
         "cover cpu and memory in the quota (e.g. nominalQuota {cpu: ..., memory: ...}), or exclude them from Kueue's "
         "accounting with kueue.resources.excludeResourcePrefixes ['cpu', 'memory'] (the manager Configuration's "
         "resources.excludeResourcePrefixes)"),
        ('kueue-cohorts:sharedPool.tenants[1].floor',
         "cover cpu and memory in the quota (e.g. nominalQuota {cpu: ..., memory: ...}), or exclude them from Kueue's "
         "accounting with kueue.resources.excludeResourcePrefixes ['cpu', 'memory'] (the manager Configuration's "
         "resources.excludeResourcePrefixes)"),
    ],
    # prod's namespaces are Label: judged as the NamespacePatches the program registers, whose merged Namespace
    # the rule reaches after the ClusterQueue's selector (the same three problems as for a created namespace).
    'system-namespace-as-tenant': [PROTECTED_TENANT_FIXES[1], PROTECTED_TENANT_FIXES[2], PROTECTED_TENANT_FIXES[0]],
    'kueues-namespace-as-tenant': PROTECTED_TENANT_FIXES,
    'extra-protected-namespace': [(k.replace("{i}", "0"), fix) for k, fix in _protected_fixes(
        "kueue-cohorts:inferenceTraining.training.namespaces", ", c12-training")],
    'two-queues-one-tenant-label': [
        ('kueue-cohorts:inferenceTraining.training.tenant',
         'give each ClusterQueue its own tenant value (two ClusterQueues selecting the same tenant label would share '
         'its namespaces)'),
    ],
    'half-a-gpu-nominal': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpualloc"]',
         "lower the nominalQuota of 'nvidia.com/gpualloc' in flavor 'c12-default' to at most 1 in total over every "
         "cohort, or add nodes"),
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota["nvidia.com/gpualloc"]',
         'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)'),
        ('kueue-cohorts:inferenceTraining.training.borrowingLimit["nvidia.com/gpualloc"]',
         'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)'),
    ],
    'half-a-gpu-node': [
        ('kueue-cohorts:nodePools[0].capacity["nvidia.com/gpualloc"]',
         'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)'),
    ],
    'half-a-gpu-floor': [
        ('kueue-cohorts:sharedPool.tenants[0].floor["nvidia.com/gpualloc"]',
         'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)'),
        ('kueue-cohorts:sharedPool.tenants[1].borrowingLimit["nvidia.com/gpualloc"]',
         'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)'),
    ],
    'half-a-gpu-service': [
        ('kueue-cohorts:inferenceTraining.inference.services[0].requests["nvidia.com/gpualloc"]',
         'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)'),
    ],
    'limits-only-service': [
        ('kueue-cohorts:inferenceTraining.inference.services[0].limits.ephemeral-storage',
         "add 'ephemeral-storage' to the ClusterQueue's nominalQuota, or drop it from the replica"),
        ('kueue-cohorts:inferenceTraining.inference.services[0].limits["nvidia.com/gpualloc"]',
         'request at most 1 per replica, or raise the nominalQuota'),
    ],
    'negative-recovery-timeout': [
        ('kueue-cohorts:kueue.waitForPodsReady.recoveryTimeout',
         'set a positive Go duration such as 10m, 0s to switch the recovery timeout off, or leave it out (it then '
         'equals timeout)'),
    ],
    'zero-timeout': [
        ('kueue-cohorts:kueue.waitForPodsReady.timeout',
         'set a positive Go duration such as 10m'),
    ],
    'timeout-beyond-go': [
        ('kueue-cohorts:kueue.waitForPodsReady.timeout',
         'write it with units ns, us, ms, s, m or h, such as 10m, 90s, 1h30m or .5m, at most 2562047h47m16.854775807s'),
    ],
    'selector-labels-not-a-map': [
        ('kueue-cohorts:kueue.managedJobsNamespaceSelector',
         'write {matchLabels: {<key>: <value>}} and/or {matchExpressions: [{key, operator: '
         'In|NotIn|Exists|DoesNotExist, values}]}'),
    ],
    'selector-a-list': [
        ('kueue-cohorts:kueue.managedJobsNamespaceSelector',
         'write a mapping (key: value)'),
    ],
    'namespace-label-not-a-label-key': [
        ('kueue-cohorts:inferenceTraining.namespaceLabel',
         "use a label key such as kueue.x-k8s.io/queue (an optional DNS subdomain prefix and '/', then at most 63 "
         "alphanumerics, '-', '_' or '.')"),
    ],
    'nan-quantity': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota.cpu',
         'write a non-negative Kubernetes quantity such as 4, "500m" or "8Gi"'),
    ],
    'infinite-quantity': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota.cpu',
         'write a non-negative Kubernetes quantity such as 4, "500m" or "8Gi"'),
    ],
    'huge-quantity': [
        ('kueue-cohorts:inferenceTraining.inference.nominalQuota.cpu',
         'write a non-negative Kubernetes quantity such as 4, "500m" or "8Gi"'),
    ],
    'no-layout': [
        ('kueue-cohorts:inferenceTraining',
         'add kueue-cohorts:inferenceTraining (asymmetric) and/or kueue-cohorts:sharedPool (symmetric)'),
        ('kueue-cohorts:trainingRuntime',
         'add inferenceTraining.training.checkpoint (claimName, storageClassName, size), or remove trainingRuntime'),
    ],
}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_config_is_refused_with_every_problem_at_its_exact_key_with_its_fix(case):
    case_id, base, mutate, key, words = case
    raw = base()
    mutate(raw)
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    problems = caught.value.problems
    assert [(p.key, p.fix) for p in problems] == EXPECTED[case_id]
    assert any(words in p.rule for p in problems if p.key == key), [p.rule for p in problems if p.key == key]
    assert str(caught.value).count("Fix:") == len(problems)  # one fix per problem, never two in one line
    for problem in problems:
        assert f"{problem.key} = " in str(caught.value) and problem.rule and problem.fix


def test_every_problem_is_reported_at_once():
    raw = _dev()
    _set("inferenceTraining|inference|borrowingLimit", {"cpu": "1"})(raw)
    _set("inferenceTraining|inference|preemption|reclaimWithinCohort", "Never")(raw)
    _set("inferenceTraining|training|priorityClass|value", 5000)(raw)
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    keys = [p.key for p in caught.value.problems]
    assert keys == [
        # the dev stack's borrowWithinCohort LowerPriority is invalid once reclaimWithinCohort is Never
        "kueue-cohorts:inferenceTraining.inference.preemption.borrowWithinCohort.policy",
        "kueue-cohorts:inferenceTraining.inference.borrowingLimit.cpu",
        "kueue-cohorts:inferenceTraining.inference.preemption.reclaimWithinCohort",
        "kueue-cohorts:inferenceTraining.training.priorityClass.value",
    ]
    assert str(caught.value).startswith("invalid stack config: 4 problems")


def _borrowing_inference_config() -> dict[str, str]:
    raw = _dev()
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    _set("inferenceTraining|inference|borrowingLimit", {"nvidia.com/gpualloc": "1"})(raw)
    return {f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()}


def test_bad_config_registers_no_resource():
    config = _borrowing_inference_config()
    error, registered = refused(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), config)
    assert "must never borrow" in str(error)
    assert registered == []  # what the mocks saw before the raise: nothing


def test_the_registers_nothing_check_catches_a_program_that_registers_a_namespace_then_refuses(tmp_path):
    """The mutant of issue 42: __main__.py with a Namespace registered before the settings check refuses. The check
    of `test_bad_config_registers_no_resource` (and of the secret test in test_runtime_env_secrets.py) sees it."""
    source = (ROOT / "__main__.py").read_text()
    anchor = "result = validate(raw, secret, owner)"
    assert source.count(anchor) == 1
    mutant = tmp_path / "__main__.py"
    mutant.write_text(source.replace(anchor, "import pulumi_kubernetes as _k8s\n"
                                             "_k8s.core.v1.Namespace('early', metadata={'name': 'early'})\n" + anchor))
    error, registered = refused(lambda: runpy.run_path(str(mutant), run_name="__main__"),
                                _borrowing_inference_config())
    assert "must never borrow" in str(error)
    assert [(r.typ, r.name) for r in registered] == [("kubernetes:core/v1:Namespace", "early")]


def test_good_stacks_validate():
    for name in ("dev", "staging", "prod"):
        load_settings(stack_raw(name))


def test_a_misspelt_required_key_is_one_problem_with_a_suggestion():
    raw = _dev()
    raw["inferenceTraining"]["training"]["localQeue"] = raw["inferenceTraining"]["training"].pop("localQueue")
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    assert [(p.key, p.rule, p.fix) for p in caught.value.problems] == [
        ("kueue-cohorts:inferenceTraining.training.localQeue", "unknown key (a typo?)",
         "did you mean 'localQueue'? Rename the key")]


def _alias_bomb(levels: int = 9) -> object:
    """A YAML alias bomb: `levels` lists of 9 references to the level below (9**levels values once expanded)."""
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, levels + 1))
    return yaml.safe_load(text)[f"a{levels}"]


def _deep(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.timeout(20)
@pytest.mark.parametrize("top, value, rule", [
    ("nodePools", _alias_bomb(), "holds more than 200000 values once YAML aliases are expanded"),
    ("resourceFlavor", {"nodeLabels": _deep(5000)}, "is nested more than 32 levels deep"),
    ("sharedPool", _alias_bomb(7), "holds more than 200000 values once YAML aliases are expanded"),
])
def test_a_config_too_big_or_too_deep_is_one_problem_not_a_hang_or_a_crash(top, value, rule):
    raw = _dev()
    raw[top] = value
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    (problem,) = caught.value.problems
    assert (problem.key, problem.value) == (f"kueue-cohorts:{top}", "<too large to show>")
    assert rule in problem.rule and problem.fix
    assert len(str(caught.value)) < 1000


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                                        max_size=4),
                    max_leaves=30))
@settings(max_examples=150, deadline=None)
def test_any_value_under_any_key_is_problems_never_an_exception(value):
    """Whatever YAML can hold, under any top-level key, the check returns problems; it never raises."""
    for top in ("nodePools", "inferenceTraining", "kueue", "trainingRuntime", "cluster"):
        raw = _dev()
        raw[top] = value
        result = validate(raw)
        assert all(p.key.startswith("kueue-cohorts:") and p.fix for p in result.problems)


LABEL_KEYS = st.sampled_from(["kueue.x-k8s.io/queue", "example.com/team", "team", "a.b/c-d"])


@settings(max_examples=25, deadline=None)
@given(training_key=LABEL_KEYS, pool_key=LABEL_KEYS, tenant=st.integers(0, 1))
def test_a_tenant_value_is_refused_only_where_the_selectors_are_the_same(training_key, pool_key, tenant):
    """Issue 26 item 9: the tenant is its selector's label requirement (namespaceLabel, value): the training tenant
    reusing a shared-pool tenant's value under another label key selects other namespaces, and is accepted."""
    raw = stack_raw("staging")
    value = raw["sharedPool"]["tenants"][tenant]["name"]
    raw["inferenceTraining"]["namespaceLabel"] = training_key
    raw["sharedPool"]["namespaceLabel"] = pool_key
    raw["inferenceTraining"]["training"]["tenant"] = value
    problems = [(p.key, p.rule, p.fix) for p in validate(raw).problems]
    if training_key != pool_key:
        assert problems == []
    else:
        assert problems == [(
            f"{SP}.tenants[{tenant}].name",
            f"the tenant label value '{value}' of namespaceLabel {pool_key} is already used at "
            f"{IT}.training.tenant: both ClusterQueues would select {pool_key}={value}",
            "give each ClusterQueue its own tenant value (two ClusterQueues selecting the same tenant label would "
            "share its namespaces)")]


def test_a_boolean_is_no_number():
    """A YAML true/false where a number is expected is refused at its key (pydantic's lax mode read true as 1:
    `qps: true` was one request a second, `count: true` one node); a number written as a string still counts."""
    raw = _dev()
    _set("cluster|kubeClientSettings", {"qps": True, "burst": "400"})(raw)
    _set("nodePools|0|count", False)(raw)
    _set("inferenceTraining|training|priorityClass|value", True)(raw)
    _set("trainingRuntime|secondsPerStep", True)(raw)
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    assert [(p.key, p.value, p.fix) for p in caught.value.problems] == [
        ("kueue-cohorts:cluster.kubeClientSettings.qps", True, "write a whole number"),
        ("kueue-cohorts:nodePools[0].count", False, "write a whole number"),
        ("kueue-cohorts:inferenceTraining.training.priorityClass.value", True, "write a whole number"),
        ("kueue-cohorts:trainingRuntime.secondsPerStep", True, "write a number"),
    ]
    assert all("not a boolean" in p.rule for p in caught.value.problems)
    raw = _dev()
    _set("cluster|kubeClientSettings", {"qps": "100", "burst": 200.0})(raw)
    assert load_settings(raw).cluster.kube_client_settings.qps == 100


@settings(max_examples=30, deadline=None)
@given(value=st.one_of(st.integers(min_value=2**31, max_value=2**80),
                       st.integers(min_value=-(2**80), max_value=-(2**31) - 1)),
       path=st.sampled_from([("nodePools", 0, "count"),
                             ("kueue", "waitForPodsReady", "requeuingStrategy", "backoffLimitCount")]))
def test_an_int_setting_outside_int32_is_refused_at_its_key(value, path):
    """Every int setting lands in an int32 API field: beyond it, one problem at its key (not an engine error)."""
    raw = stack_raw("dev")
    if path[0] == "kueue":
        raw["kueue"] = {"waitForPodsReady": {"timeout": "5m", "requeuingStrategy": {}}}
    node = raw
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    key = "kueue-cohorts:" + ".".join(str(p) for p in path).replace(".0.", "[0].")
    fixes = {p.fix for p in caught.value.problems if p.key == key}
    assert fixes == {"lower the value" if value > 0 else "raise the value"}, [
        (p.key, p.fix) for p in caught.value.problems]
