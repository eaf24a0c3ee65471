"""Pure: the PreemptibleTrainingRuntime's manifests (TrainingRuntime, the trainer ConfigMap) and TrainJobs.

Shaped for Kubeflow Trainer v2.2.1 (toolchain/versions.toml [crds] trainer; `trainer.kubeflow.org/v1alpha1`):
`spec.mlPolicy = {numNodes, torch: {}}` (since v2.2 numProcPerNode lives on TrainJob.spec.trainer, not under
mlPolicy.torch, whose v2.2 schema has no properties), and `spec.template.spec` a JobSet spec with the `node`
replicated job labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer` whose container is named `node`
(pkg/constants/constants.go: LabelTrainJobAncestor, AncestorTrainer, Node).

The pod it describes:
- runs `python -m trainer` in exec form, so python is PID 1 and receives the kubelet's SIGTERM itself;
- gets the entrypoint (the repo's trainer/ package) from a ConfigMap, mounted as the `trainer` package;
- mounts the CheckpointVolume's RWX PVC at the checkpoint root and scopes checkpoints per run: the TrainJob name
  reaches the pod as the JobSet name (the Trainer names the JobSet after the TrainJob: plugins/jobset/jobset.go,
  `jobsetv1alpha2ac.JobSet(trainJob.Name, ...)`), which the JobSet controller puts on every pod as the label
  `jobset.sigs.k8s.io/jobset-name` (jobset_controller.go labelAndAnnotateObject); the downward API turns it
  into KUEUE_COHORTS_RUN_NAME, and checkpoints go to `<root>/<TrainJob name>/checkpoint-<step>/`;
- has terminationGracePeriodSeconds = checkpoint save + one step, at least 60 (components.settings.checkpoint_timing),
and the
  annotation `kueue-cohorts/checkpoint-save-seconds` so the rule book can check the grace period against the save
  time;
- survives any number of stops: a Kueue reclaim is not counted (the Job controller untracks the pods it deletes for
  a suspension, Kubernetes v1.36.3 `pkg/controller/job/job_controller.go` deleteJobPods), but an evicted or drained
  pod counts as failed unless a podFailurePolicy ignores it (isPodFailed), and past backoffLimit the Job fails and
  JobSet restarts counting toward maxRestarts (JobSet v0.12.0 `pkg/controllers/failure_policy.go`; jobset#1117).
  The trainer exits PREEMPTED_EXIT_CODE after its stop save (never 0: an evicted pod whose containers exited 0 is
  Succeeded and would complete the Job), the trainer Job ignores that code (`podFailurePolicy`, which needs
  `restartPolicy: Never`) and DisruptionTarget pods, and the JobSet restarts at most MAX_RESTARTS times for real
  failures. The annotation `kueue-cohorts/preempted-exit-code` declares the code to the rule book (and, on the pods,
  to the sandbox's kwok);
- serves the trainer's own metrics (trainer/metrics.py: checkpoint age, steps lost at the last preemption, flush
  time) on METRICS_PORT by default (`KUEUE_COHORTS_METRICS_PORT`, container port `metrics`; the image needs
  prometheus-client, pinned in requirements-trainer.txt; `trainingRuntime.env: {KUEUE_COHORTS_METRICS_PORT: ""}`
  turns them off), and its pods carry METRICS_LABEL, which the stack's PodMonitor selects
  (components.model.alerts.pod_monitor).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from kueue_cohorts.components.settings.runtime import EnvVarSource, TrainingRuntimeSettings
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_LABELS, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL

API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
SAVE_SECONDS_ANNOTATION = "kueue-cohorts/checkpoint-save-seconds"
SAVE_STEPS_ANNOTATION = "kueue-cohorts/save-steps"
PREEMPTED_EXIT_CODE_ANNOTATION = "kueue-cohorts/preempted-exit-code"
PREEMPTED_EXIT_CODE = 75
METRICS_PORT = 9464
"""The port the trainer serves its Prometheus metrics on (trainer/metrics.py, ``KUEUE_COHORTS_METRICS_PORT``), named
``metrics`` on the container; the stack's PodMonitor scrapes it (components.model.alerts.pod_monitor)."""
METRICS_PORT_ENV = "KUEUE_COHORTS_METRICS_PORT"
"""The trainer's metrics port variable (trainer/entrypoint.py); ``trainingRuntime.env`` may set it ("" : no metrics)."""
METRICS_LABEL = ("kueue-cohorts/metrics", "trainer")
"""The label of every trainer pod the PodMonitor selects."""
"""The trainer's exit code after a preemption save (trainer/entrypoint.py PREEMPTED_EXIT_CODE; sysexits EX_TEMPFAIL)."""
MAX_RESTARTS = 3
"""JobSet failurePolicy.maxRestarts: real failures (crashes past backoffLimit) restart the JobSet this often; reclaims
never count (the trainer Job's podFailurePolicy ignores the preempted exit code)."""

NODE = "node"  # the replicated job and its container (Trainer constants.Node)
TRAINER_PARENT = "/opt/kueue-cohorts"  # on PYTHONPATH; the ConfigMap is mounted at <this>/trainer
COMMAND = ["python", "-m", "trainer"]
TRAINER_SOURCE_DIR = Path(__file__).resolve().parents[2] / "trainer"

def trainer_sources(source_dir: Path = TRAINER_SOURCE_DIR) -> dict[str, str]:
    """The entrypoint package as ConfigMap data: {"<file>.py": text} for every .py file of trainer/ (sorted).

    Raises FileNotFoundError if the directory has no __main__.py (the ConfigMap would not be runnable).
    """
    files = {path.name: path.read_text() for path in sorted(Path(source_dir).glob("*.py"))}
    if "__main__.py" not in files:
        raise FileNotFoundError(f"{source_dir} has no __main__.py: the trainer package is missing")
    return files


def _env_var(name: str, value: str | EnvVarSource) -> dict[str, Any]:
    """One core/v1 EnvVar: {name, value} for a literal, {name, valueFrom: {secretKeyRef | configMapKeyRef}} for a
    reference to a Secret or ConfigMap key (the value itself never appears in the manifest)."""
    if isinstance(value, EnvVarSource):
        return {"name": name, "valueFrom": value.manifest()}
    return {"name": name, "value": value}


def configmap_name(settings: TrainingRuntimeSettings) -> str:
    """The entrypoint ConfigMap's name: "<runtime name>-trainer" (at most 253 characters)."""
    return f"{settings.name}-trainer"[:253]


def render_runtime(settings: TrainingRuntimeSettings, namespace: str, claim_name: str) -> dict[str, Any]:
    """The TrainingRuntime manifest (trainer.kubeflow.org/v1alpha1, Trainer v2.2.1 schema), as the API receives it.

    Args:
        settings: the runtime settings.
        namespace: the training namespace (the checkpoint PVC's; TrainJobs must be created there too).
        claim_name: the RWX PersistentVolumeClaim holding the checkpoints.
    Returns:
        {"apiVersion", "kind", "metadata", "spec"} in the API's camelCase field names.
    """
    root = settings.checkpoint_mount_path.rstrip("/") or "/"
    env = [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PYTHONPATH", "value": TRAINER_PARENT},
        {"name": "HF_HOME", "value": "/workspace/hf_cache"},
        {"name": "XDG_CACHE_HOME", "value": "/workspace/cache"},
        {"name": "TRITON_CACHE_DIR", "value": "/workspace/triton_cache"},
        {"name": "MPLCONFIGDIR", "value": "/workspace/matplotlib"},
        {
            "name": "KUEUE_COHORTS_RUN_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOBSET_NAME_LABEL}']"}},
        },
        {"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": root},
        {"name": "KUEUE_COHORTS_RECIPE", "value": settings.recipe},
        {"name": "KUEUE_COHORTS_SAVE_STEPS", "value": str(settings.save_steps)},
    ]
    if METRICS_PORT_ENV not in settings.env:
        env.append({"name": METRICS_PORT_ENV, "value": str(METRICS_PORT)})
    env += [_env_var(name, value) for name, value in sorted(settings.env.items())]
    container: dict[str, Any] = {
        "name": NODE,
        "image": settings.image,
        "command": list(COMMAND),
        "workingDir": "/workspace",
        "env": env,
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "resources": {"requests": dict(settings.requests), "limits": settings.resolved_limits},
        "volumeMounts": [
            {"name": "checkpoints", "mountPath": root},
            {"name": "trainer", "mountPath": f"{TRAINER_PARENT}/trainer", "readOnly": True},
            {"name": "workspace", "mountPath": "/workspace"},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": settings.grace_period_seconds,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534, "fsGroup": 65534},
        "containers": [container],
        "volumes": [
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim_name}},
            {"name": "trainer", "configMap": {"name": configmap_name(settings), "defaultMode": 0o444}},
            {"name": "workspace", "emptyDir": {}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "512Mi"}},
        ],
    }
    if settings.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": secret} for secret in settings.image_pull_secrets]
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainingRuntime",
        "metadata": {
            "name": settings.name,
            "namespace": namespace,
            "labels": {FRAMEWORK_LABEL: "torch", **MANAGED_LABELS},
            "annotations": {
                SAVE_SECONDS_ANNOTATION: _seconds(settings.checkpoint_save_seconds),
                SAVE_STEPS_ANNOTATION: str(settings.save_steps),
                PREEMPTED_EXIT_CODE_ANNOTATION: str(PREEMPTED_EXIT_CODE),
            },
        },
        "spec": {
            "mlPolicy": {"numNodes": settings.num_nodes, "torch": {}},
            "template": {
                "spec": {
                    "failurePolicy": {"maxRestarts": MAX_RESTARTS},
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "podFailurePolicy": _pod_failure_policy(),
                                    "template": {
                                        # on the pods too: the sandbox's kwok stops a deleted pod with this code
                                        "metadata": {"labels": {METRICS_LABEL[0]: METRICS_LABEL[1]},
                                                     "annotations": {
                                            PREEMPTED_EXIT_CODE_ANNOTATION: str(PREEMPTED_EXIT_CODE)}},
                                        "spec": pod_spec,
                                    },
                                },
                            },
                        }
                    ],
                }
            },
        },
    }


def _pod_failure_policy() -> dict[str, Any]:
    """The trainer Job's batch/v1 podFailurePolicy: a pod that ends with the trainer's preempted exit code (it saved
    and stopped on SIGTERM) or that the kubelet or the eviction API marked DisruptionTarget does not count toward
    backoffLimit; any other failure does."""
    return {"rules": [
        {"action": "Ignore", "onExitCodes": {"containerName": NODE, "operator": "In", "values": [PREEMPTED_EXIT_CODE]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    ]}


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def render_trainjob(
    name: str,
    namespace: str,
    runtime_name: str,
    local_queue: str,
    priority_class: str,
    num_nodes: Optional[int] = None,
) -> dict[str, Any]:
    """A TrainJob (trainer.kubeflow.org/v1alpha1) of a namespaced TrainingRuntime, queued to Kueue.

    Args:
        name: the TrainJob name (RFC 1035 label, at most 63 characters; it also names the checkpoint directory).
        namespace: the runtime's namespace (a TrainJob can only use a TrainingRuntime of its own namespace).
        runtime_name: the TrainingRuntime's name (spec.runtimeRef.name, kind TrainingRuntime).
        local_queue: the training LocalQueue name (label kueue.x-k8s.io/queue-name).
        priority_class: the WorkloadPriorityClass name (label kueue.x-k8s.io/priority-class).
        num_nodes: spec.trainer.numNodes; None leaves the runtime's mlPolicy.numNodes.
    Returns:
        The manifest. Raises ValueError if name is not an RFC 1035 label.
    """
    if not re.match(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", name) or len(name) > 63:
        raise ValueError(f"TrainJob name {name!r} must be an RFC 1035 label (a-z first, a-z0-9-, at most 63)")
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": runtime_name},
    }
    if num_nodes is not None:
        spec["trainer"] = {"numNodes": num_nodes}
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_NAME_LABEL: local_queue, PRIORITY_CLASS_LABEL: priority_class, **MANAGED_LABELS},
        },
        "spec": spec,
    }
