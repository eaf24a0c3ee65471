"""One compliant stack for the policy tests, written by hand (not by components/): the guide's c12 layout plus a
workload of each kind, a checkpoint-safe TrainingRuntime and a safe Kueue manager Configuration.

Each test deep-copies `compliant()`, breaks exactly one property and asserts the exact violation messages.
"""
from __future__ import annotations

import copy
from typing import Any, Iterable, Optional

from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject, from_resource

GPU_RESOURCES = ["cpu", "memory", "nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem"]
INFERENCE_NOMINAL = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                     "nvidia.com/gpumem": "2048"}
DEV_CAPACITY = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                "nvidia.com/gpumem": "2048"}
UNKNOWN = UNKNOWN_STRING_VALUE


def _resources(nominal: dict, borrowing: Optional[dict]) -> list[dict]:
    out = []
    for name in GPU_RESOURCES:
        entry = {"name": name, "nominalQuota": nominal[name]}
        if borrowing is not None:
            entry["borrowingLimit"] = borrowing[name]
        out.append(entry)
    return out


def cluster_queue(name: str, role: str, nominal: dict, borrowing: Optional[dict], reclaim: str = "Any",
                  api_version: str = "kueue.x-k8s.io/v1beta2", cohort: str = "c12-shared") -> dict:
    """A ClusterQueue manifest of the c12 shape (one resource group, flavor c12-default)."""
    return {
        "apiVersion": api_version,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": {"kueue-cohorts/role": role}},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"kueue-cohorts/tenant": name}},
            "resourceGroups": [{
                "coveredResources": list(GPU_RESOURCES),
                "flavors": [{"name": "c12-default", "resources": _resources(nominal, borrowing)}],
            }],
            "preemption": {"reclaimWithinCohort": reclaim, "withinClusterQueue": "LowerPriority"},
        },
    }


def inference_cq() -> dict:
    return cluster_queue("c12-inference-cq", "inference", INFERENCE_NOMINAL, {k: "0" for k in GPU_RESOURCES})


def training_cq() -> dict:
    return cluster_queue("c12-training-cq", "training", {k: "0" for k in GPU_RESOURCES}, INFERENCE_NOMINAL)


def local_queue(name: str, namespace: str, cq: str) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq}}


def priority_class(name: str, value: Any, role: Optional[str] = None) -> dict:
    meta: dict = {"name": name}
    if role:
        meta["labels"] = {"kueue-cohorts/role": role}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": meta, "value": value}


def inference_service() -> dict:
    requests = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                "nvidia.com/gpumem": "2048"}
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "c12-inference-demo", "namespace": "c12-inference",
                     "labels": {"kueue.x-k8s.io/queue-name": "c12-inference-lq",
                                "kueue.x-k8s.io/priority-class": "c12-inference-prio"}},
        "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1,
                               # one replica holds the whole quota: only a rollout without surge can update it
                               "deploymentStrategy": {"type": "RollingUpdate",
                                                      "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                               "model": {"modelFormat": {"name": "huggingface"},
                                         "resources": {"requests": requests, "limits": dict(requests, cpu="2")}}}},
    }


def training_job() -> dict:
    """A batch/v1 Job on the training queue (pod template labels carry the queue too)."""
    labels = {"kueue.x-k8s.io/queue-name": "c12-training-lq", "kueue.x-k8s.io/priority-class": "c12-training-prio"}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "warmup", "namespace": "c12-training", "labels": dict(labels)},
        "spec": {"template": {"metadata": {"labels": dict(labels)},
                              "spec": {"containers": [{"name": "main", "image": "busybox"}]}}},
    }


def checkpoint_pvc(access_mode: str = "ReadWriteMany") -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c12-ckpt", "namespace": "c12-training"},
            "spec": {"accessModes": [access_mode], "resources": {"requests": {"storage": "5Gi"}}}}


def training_runtime() -> dict:
    """The guide's runtime, fixed: exec-form start, grace 90s > declared save time 30s, RWX checkpoint claim, a
    reclaim (the trainer's exit 75) ignored by the Job's podFailurePolicy with restartPolicy Never."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "c12-checkpoint-runtime", "namespace": "c12-training",
                     "labels": {"trainer.kubeflow.org/framework": "torch"},
                     "annotations": {"kueue-cohorts/checkpoint-save-seconds": "30",
                                     "kueue-cohorts/preempted-exit-code": "75"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"backoffLimit": 0, "podFailurePolicy": {"rules": [
                        {"action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In",
                                                             "values": [75]}}]},
                             "template": {"spec": {
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 90,
                        "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c12-ckpt"}},
                                    {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                        "containers": [{
                            "name": "node",
                            "image": "trainer:latest",
                            "command": ["bash", "-ec"],
                            "args": ["mkdir -p \"$CKPT_DIR\"\nexec python -m trainer.entrypoint"],
                            "volumeMounts": [{"name": "ckpt", "mountPath": "/mnt/ckpt"},
                                             {"name": "dshm", "mountPath": "/dev/shm"}],
                        }],
                    }}},
                },
            }]}},
        },
    }


def kueue_config_map(config_yaml: Optional[str] = None) -> dict:
    text = config_yaml if config_yaml is not None else SAFE_MANAGER_CONFIG
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": text}}


SAFE_MANAGER_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
integrations:
  frameworks: [batch/job, pod, deployment, jobset.x-k8s.io/jobset, trainer.kubeflow.org/trainjob]
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: [kube-system, kueue-system]
waitForPodsReady:
  timeout: 10m
"""


def compliant() -> dict[str, dict]:
    """Every manifest of the compliant stack, by Pulumi resource name (fresh copies each call)."""
    return copy.deepcopy({
        "flavor": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "c12-default"}, "spec": {}},
        "inference-cq": inference_cq(),
        "training-cq": training_cq(),
        "inference-lq": local_queue("c12-inference-lq", "c12-inference", "c12-inference-cq"),
        "training-lq": local_queue("c12-training-lq", "c12-training", "c12-training-cq"),
        "inference-prio": priority_class("c12-inference-prio", 1000, "inference"),
        "training-prio": priority_class("c12-training-prio", 10, "training"),
        "isvc": inference_service(),
        "job": training_job(),
        "ckpt": checkpoint_pvc(),
        "runtime": training_runtime(),
        "kueue-config": kueue_config_map(),
    })


def type_token(manifest: dict) -> str:
    """The pulumi-kubernetes type token of a manifest: kubernetes:<apiVersion with core/ for v1>:<kind>."""
    api_version = manifest["apiVersion"]
    if "/" not in api_version:
        api_version = f"core/{api_version}"
    return f"kubernetes:{api_version}:{manifest['kind']}"


def urn(resource_name: str, manifest: dict) -> str:
    return f"urn:pulumi:test::kueue-cohorts::{type_token(manifest)}::{resource_name}"


def kube(resource_name: str, manifest: dict, *, proxied: bool = True) -> KubeObject:
    """A KubeObject as the analyzer would build it (props wrapped in the SDK's unknown-checking proxy)."""
    props = unknown_checking_proxy(copy.deepcopy(manifest)) if proxied else manifest
    obj = from_resource(type_token(manifest), props, urn(resource_name, manifest), resource_name)
    assert obj is not None
    return obj


def stack(manifests: dict[str, dict]) -> list[KubeObject]:
    return [kube(name, m) for name, m in manifests.items()]


def messages(violations: Iterable) -> list[str]:
    return [v.message for v in violations]
