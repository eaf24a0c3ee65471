"""kwok: its stage configuration (from the kwok Go module) and the fake GPU nodes built from the stack's nodePools.

kwok has no built-in stages when run out of cluster; it reads Stage objects from ``--config``. We concatenate the
stage files kwokctl uses by default (``pkg/kwokctl/runtime/cluster.go``) straight from the module cache, except
``pod-complete``: Pods of a Job must keep Running, otherwise a training Job would finish before it can be preempted.

One thing a kubelet does is added (``STOP_STAGES``): a deleted Pod that declares the exit code its container uses
after a graceful stop (annotation ``kueue-cohorts/preempted-exit-code``, set by our TrainingRuntime on its trainer
pods) first ends in phase Failed with that exit code, as the kubelet reports it after SIGTERM (Kubernetes v1.36.3
``pkg/kubelet/kubelet_pods.go`` getPhase of a terminal pod), and only then is removed. The Job controller needs that
terminal phase: with a podFailurePolicy it counts (or ignores) a deleted Pod only once it is Failed
(``pkg/controller/job/job_controller.go`` isPodFailed, onlyReplaceFailedPods) and keeps its finalizer until then, and
our trainer Job ignores that exit code so that a reclaim is no failure.

A deleted Pod keeps its node for its grace period, as under a kubelet (issue 37): the API server sets
``metadata.deletionTimestamp`` to the deletion time plus the grace period (the DeleteOptions' or
``spec.terminationGracePeriodSeconds``, default 30; Kubernetes v1.36.3 ``pkg/registry/core/pod/strategy.go``
CheckGracefulDelete), and the kubelet runs preStop and then SIGTERM within that period and SIGKILLs at its end
(``pkg/kubelet/kuberuntime/kuberuntime_container.go`` killContainer). Every stage that ends a deleted Pod therefore
waits until that timestamp (``GRACE_DELAY``: kwok v0.8.0 ``StageDelay.durationFrom``, whose value, when it parses as
an RFC 3339 time, is that time minus now: ``pkg/apis/v1alpha1/stage_types.go``, ``pkg/utils/lifecycle/
value_duration_from.go``). That is the worst case the reclaim promise must survive: a container that ignores SIGTERM
or a preStop that lasts. A Pod whose containers are known to exit sooner declares it with kwok's own annotation
``pod-delete.stage.kwok.x-k8s.io/delay`` (a Go duration, as kwok's ``kustomize/stage/pod/general/pod-delete.yaml``
reads it). Until then the Pod stays bound and Running, so the kube-scheduler keeps counting its requests on the node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

import yaml

from kueue_cohorts.sandbox.apply import SAFE_LOADER
from kueue_cohorts.sandbox.ports import LOOPBACK

#: Annotation kwok's ``--manage-nodes-with-annotation-selector`` matches (kwok docs, "kwok out of cluster").
NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
#: Label that marks the sandbox's nodes (for ``status`` and for users' node selectors).
NODE_LABEL = ("type", "kwok")
#: Stage files, relative to the kwok module directory: nodes become Ready and keep a lease; Pods become Running
#: and Ready and stay so; a Pod with a deletionTimestamp is removed once its grace period is over (there is no
#: kubelet to do it).
STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
    # PersistentVolumeClaims of StorageClass kwok-volume get a PersistentVolume and become Bound (the training
    # checkpoint PVC); deleting them deletes the volume.
    "kustomize/stage/volume/fast/pvc-provision.yaml",
    "kustomize/stage/volume/fast/pv-bind.yaml",
    "kustomize/stage/volume/fast/pvc-delete.yaml",
    "kustomize/stage/volume/fast/pv-delete.yaml",
)
#: kwok's annotation for how long after its deletion a Pod is removed (a Go duration such as ``"2s"``); we read it
#: as "the containers exit this long after SIGTERM", for Pods known to exit before their grace period ends.
EXIT_DELAY_ANNOTATION = "pod-delete.stage.kwok.x-k8s.io/delay"
#: The delay of every stage that ends a deleted Pod: the declared exit delay, else until ``deletionTimestamp`` (the
#: deletion time plus the grace period). gojq's ``//`` takes the right side when the left is null.
GRACE_DELAY: dict[str, Any] = {"durationFrom": {"jq": {"expression": (
    f'.metadata.annotations["{EXIT_DELAY_ANNOTATION}"] // .metadata.deletionTimestamp')}}}
#: The pod annotation naming the exit code of a graceful stop (components/model/runtime.py puts it on the trainer).
STOP_EXIT_CODE_ANNOTATION = "kueue-cohorts/preempted-exit-code"
_DECLARES = f'.metadata.annotations["{STOP_EXIT_CODE_ANNOTATION}"]'
#: The kubelet's graceful stop of a deleted Pod that declares its exit code: phase Failed, every container
#: terminated with that code; then removed once terminal.
STOP_STAGES = f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-stop-gracefully
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '{_DECLARES}'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'NotIn'
      values: ['Succeeded', 'Failed']
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      {{{{ $code := index .metadata.annotations "{STOP_EXIT_CODE_ANNOTATION}" }}}}
      phase: Failed
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        type: Ready
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: {{{{ $code }}}}
            finishedAt: {{{{ $now | Quote }}}}
            reason: Error
      {{{{ end }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete-stopped
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '{_DECLARES}'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Succeeded', 'Failed']
  next:
    delete: true
"""

#: kwok's default StorageClass (``kustomize/stage/volume/fast/storage-class.yaml``), applied by ``up``.
STORAGE_CLASS_FILE = "kustomize/stage/volume/fast/storage-class.yaml"
POD_CIDR = "10.1.0.0/16"
NODE_IP = "10.2.0.1"


class NodePoolLike(Protocol):
    """What :func:`node_manifests` reads from a ``components.settings.NodePool`` (frozen: read-only attributes)."""

    @property
    def name(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def capacity(self) -> Mapping[str, str]: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def taints(self) -> Sequence[Any]: ...


def stage_config(kwok_module_dir: Path, files: Sequence[str] = STAGE_FILES) -> str:
    """Return the multi-document YAML of the kwok Stage objects in ``files`` (read from ``kwok_module_dir``), with
    ``pod-delete`` limited to Pods that declare no graceful stop and ``STOP_STAGES`` added for those that do; both
    ending stages wait ``GRACE_DELAY`` (the Pod's grace period, or its declared exit delay).

    Raises FileNotFoundError when the module lacks one of them (a different kwok version than pinned).
    """
    docs = []
    for rel in files:
        for doc in yaml.load_all((kwok_module_dir / rel).read_text(), Loader=SAFE_LOADER):
            if doc and doc.get("kind") == "Stage":
                docs.append(doc)
    if not docs:
        raise FileNotFoundError(f"no kwok Stage found in {kwok_module_dir} ({', '.join(files)})")
    for doc in docs:
        if doc["metadata"]["name"] == "pod-delete":  # a Pod that declares a graceful stop goes through STOP_STAGES
            doc["spec"]["selector"]["matchExpressions"].append({"key": _DECLARES, "operator": "DoesNotExist"})
            doc["spec"]["delay"] = GRACE_DELAY
    stops = [doc for doc in yaml.safe_load_all(STOP_STAGES) if doc]
    for doc in stops:
        if doc["metadata"]["name"] == "pod-stop-gracefully":  # the container exits at the end of the grace period
            doc["spec"]["delay"] = GRACE_DELAY
    docs += stops
    return yaml.safe_dump_all(docs, sort_keys=False)


def kwok_args(binary: Path, kubeconfig: Path, config: Path, port: int) -> list[str]:
    """Return kwok's argv: manage only nodes annotated ``kwok.x-k8s.io/node=fake``, health on loopback ``port``."""
    return [
        str(binary), f"--kubeconfig={kubeconfig}", f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION[0]}={NODE_ANNOTATION[1]}",
        f"--cidr={POD_CIDR}", f"--node-ip={NODE_IP}", "--node-lease-duration-seconds=40",
        f"--server-address={LOOPBACK}:{port}",
    ]


def node_name(pool: str, index: int) -> str:
    """Return the name of node ``index`` (0-based) of node pool ``pool``, e.g. ``gpu-0``."""
    return f"{pool}-{index}"


def node_manifests(pools: Iterable[NodePoolLike], max_pods: int = 110) -> list[dict[str, Any]]:
    """Return one core/v1 Node per node of every pool, with the pool's capacity as ``status.capacity`` and
    ``status.allocatable`` (plus ``pods: max_pods`` unless the pool sets it) and its labels plus ``type: kwok`` and
    ``kubernetes.io/hostname``, and the pool's ``taints`` as ``spec.taints`` (none: Pods need no toleration).
    kwok's node-initialize stage keeps the given capacity and fills conditions, addresses and nodeInfo.
    """
    nodes = []
    for pool in pools:
        capacity = {"pods": str(max_pods), **{k: str(v) for k, v in pool.capacity.items()}}
        for i in range(pool.count):
            name = node_name(pool.name, i)
            labels = {**pool.labels, NODE_LABEL[0]: NODE_LABEL[1], "kubernetes.io/hostname": name,
                      "kueue-cohorts/node-pool": pool.name}
            nodes.append({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": {NODE_ANNOTATION[0]: NODE_ANNOTATION[1]}},
                "spec": {"taints": [t.model_dump(by_alias=True, exclude_none=True) for t in pool.taints]}
                if pool.taints else {},
                "status": {"capacity": capacity, "allocatable": dict(capacity)},
            })
    return nodes
