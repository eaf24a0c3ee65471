"""PreemptibleTrainingRuntime: a Kubeflow Trainer TrainingRuntime whose TrainJobs survive Kueue preemption.

Shaped for Kubeflow Trainer v2.2.1 (toolchain/versions.toml [crds] trainer; `trainer.kubeflow.org/v1alpha1`):
`spec.mlPolicy = {numNodes, torch: {}}` (since v2.2 numProcPerNode lives on TrainJob.spec.trainer, not under
mlPolicy.torch, whose v2.2 schema has no properties), and `spec.template.spec` a JobSet spec with the `node`
replicated job labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer` whose container is named `node`
(pkg/constants/constants.go: LabelTrainJobAncestor, AncestorTrainer, Node).

The pod it describes:
- runs `python -m trainer` in exec form, so python is PID 1 and receives the kubelet's SIGTERM itself;
- gets the entrypoint (the repo's trainer/ package) from a ConfigMap child, mounted as the `trainer` package;
- mounts the CheckpointVolume's RWX PVC at the checkpoint root and scopes checkpoints per run: the TrainJob name
  reaches the pod as the JobSet name (the Trainer names the JobSet after the TrainJob: plugins/jobset/jobset.go,
  `jobsetv1alpha2ac.JobSet(trainJob.Name, ...)`), which the JobSet controller puts on every pod as the label
  `jobset.sigs.k8s.io/jobset-name` (jobset_controller.go labelAndAnnotateObject); the downward API turns it
  into KUEUE_COHORTS_RUN_NAME, and checkpoints go to `<root>/<TrainJob name>/checkpoint-<step>/`;
- has terminationGracePeriodSeconds = checkpoint save + one step, at least 60 (components.planning), and the annotation
  `kueue-cohorts/checkpoint-save-seconds` so the policy pack can check the grace period against the save time.

Per-node requests and limits (times numNodes) must fit the training ClusterQueue's usable quota (nominalQuota +
borrowingLimit): Kueue never admits a TrainJob that asks for more (our guide's runtime asked for gpucores 50 and
gpumem 4096 against 20 and 2048). Such settings are refused before any resource is registered.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from components import planning, quantity
from components.errors import Problem, SettingsError

if TYPE_CHECKING:  # components.checkpoint imports components.settings, which imports this module
    from components.checkpoint import CheckpointVolume

TYPE_TOKEN = "kueue-cohorts:training:PreemptibleTrainingRuntime"
SETTINGS_KEY = "kueue-cohorts:trainingRuntime"
API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
SAVE_SECONDS_ANNOTATION = "kueue-cohorts/checkpoint-save-seconds"
SAVE_STEPS_ANNOTATION = "kueue-cohorts/save-steps"
MANAGED_BY = {"app.kubernetes.io/managed-by": "kueue-cohorts"}

NODE = "node"  # the replicated job and its container (Trainer constants.Node)
TRAINER_PARENT = "/opt/kueue-cohorts"  # on PYTHONPATH; the ConfigMap is mounted at <this>/trainer
COMMAND = ["python", "-m", "trainer"]
TRAINER_SOURCE_DIR = Path(__file__).resolve().parents[1] / "trainer"
MIN_GRACE_SECONDS = 60  # the guide's terminationGracePeriodSeconds; policy checkpoint-safe-runtime's default minimum
GUIDE_IMAGE = "build-harbor.alauda.cn/mlops/llamafactory0.9-cu126-amd64:v0.1.0"

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_RECIPE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
RESERVED_ENV = frozenset(
    {"PYTHONPATH", "KUEUE_COHORTS_RUN_NAME", "KUEUE_COHORTS_CHECKPOINT_ROOT", "KUEUE_COHORTS_RECIPE",
     "KUEUE_COHORTS_SAVE_STEPS"}
)


Quantity = quantity.Quantity


class TrainingRuntimeSettings(BaseModel):
    """`kueue-cohorts:trainingRuntime`: the preemptible TrainingRuntime of the training namespaces.

    Every field has a default, so an absent key gives the guide's runtime with a quota that fits the dev cohort.
    name: TrainingRuntime name (TrainJobs reference it; default "c12-checkpoint-runtime").
    image: the training image; must bring python, torch and transformers (default: the guide's image).
    recipe: `module:function` building the Trainer (default the tiny self-contained demo, "trainer.demo:build_trainer").
    checkpoint_mount_path: where the checkpoint PVC is mounted (absolute; default "/mnt/checkpoints").
    num_nodes: mlPolicy.numNodes (>= 1; default 1).
    requests / limits: per node (core/v1 ResourceRequirements); omitted: requests cpu 1, memory 2Gi; limits cpu 2,
        memory 4Gi and the guide's GPU slice sized to the dev cohort (gpualloc 1, gpucores 20, gpumem 2048).
    seconds_per_step: measured seconds per optimizer step (default 5, the guide's).
    max_lost_work_seconds: hard-stop loss budget; save_steps = floor(budget / seconds_per_step) (default 500: 100
        steps, about 8 minutes, the guide's).
    checkpoint_save_seconds: seconds to write one checkpoint (default 30); put on the runtime as the annotation
        kueue-cohorts/checkpoint-save-seconds.
    termination_grace_period_seconds: omitted means checkpoint_save_seconds + one step rounded up, at least 60 (the
        guide's value, the policy pack's default minimum); a value not longer than checkpoint_save_seconds is refused.
    image_pull_secrets: names of Secrets in the training namespace (default none).
    env: extra environment for the recipe (e.g. KUEUE_COHORTS_DEMO_MAX_STEPS); the runtime's own variables
        (RESERVED_ENV) and the Trainer's PET_* are refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    name: Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253)] = "c12-checkpoint-runtime"
    image: Annotated[str, Field(min_length=1)] = GUIDE_IMAGE
    recipe: Annotated[str, Field(pattern=_RECIPE)] = "trainer.demo:build_trainer"
    checkpoint_mount_path: Annotated[str, Field(pattern=r"^/[^:]*$")] = "/mnt/checkpoints"
    num_nodes: int = Field(default=1, ge=1)
    requests: dict[str, Quantity] = Field(default_factory=lambda: {"cpu": "1", "memory": "2Gi"})
    limits: dict[str, Quantity] = Field(
        default_factory=lambda: {
            "cpu": "2",
            "memory": "4Gi",
            "nvidia.com/gpualloc": "1",
            "nvidia.com/gpucores": "20",
            "nvidia.com/gpumem": "2048",
        }
    )
    seconds_per_step: float = Field(default=5.0, gt=0)
    max_lost_work_seconds: float = Field(default=500.0, gt=0)
    checkpoint_save_seconds: float = Field(default=30.0, gt=0)
    termination_grace_period_seconds: Optional[int] = Field(default=None, ge=0)
    image_pull_secrets: list[Annotated[str, Field(pattern=_DNS_SUBDOMAIN)]] = Field(default_factory=list)
    env: dict[Annotated[str, Field(pattern=_ENV_NAME)], str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _plan(self) -> "TrainingRuntimeSettings":
        planning.save_steps(self.max_lost_work_seconds, self.seconds_per_step)
        if self.termination_grace_period_seconds is not None:
            planning.check_grace_period(self.termination_grace_period_seconds, self.checkpoint_save_seconds)
        reserved = sorted(n for n in self.env if n in RESERVED_ENV or n.startswith("PET_"))
        if reserved:
            raise ValueError(
                f"env {reserved} is reserved (set by the runtime: {', '.join(sorted(RESERVED_ENV))}; the Trainer's "
                "PET_*): rename those variables"
            )
        for resource, limit in self.limits.items():
            request = self.requests.get(resource)
            if request is not None and quantity.parse(request) > quantity.parse(limit):
                raise ValueError(
                    f"requests[{resource!r}] = {request} exceeds limits[{resource!r}] = {limit}: a request must not "
                    "exceed its limit (core/v1 ResourceRequirements); lower the request or raise the limit"
                )
        return self

    @property
    def save_steps(self) -> int:
        """Optimizer steps between periodic checkpoints (planning.save_steps of the budget and step time)."""
        return planning.save_steps(self.max_lost_work_seconds, self.seconds_per_step)

    @property
    def grace_period_seconds(self) -> int:
        """terminationGracePeriodSeconds: the explicit value, else checkpoint save + one step rounded up, at least
        MIN_GRACE_SECONDS (60: the guide's value and the policy pack's default minTerminationGracePeriodSeconds)."""
        if self.termination_grace_period_seconds is not None:
            return self.termination_grace_period_seconds
        return planning.grace_period_seconds(self.checkpoint_save_seconds, self.seconds_per_step, MIN_GRACE_SECONDS)

    def effective_requests(self) -> dict[str, str]:
        """Per-node requests as the API server defaults them: a resource with only a limit requests its limit."""
        merged = dict(self.limits)
        merged.update(self.requests)
        return merged


# --- pure checks and renderers ---------------------------------------------------------------------------------------


def _key(field: str, resource: str) -> str:
    return f'{SETTINGS_KEY}.{field}["{resource}"]'


def quota_problems(settings: TrainingRuntimeSettings, usable_quota: Mapping[str, str]) -> list[Problem]:
    """Every per-node request or limit that the training ClusterQueue can never admit.

    Args:
        settings: the runtime settings.
        usable_quota: the training ClusterQueue's nominalQuota + borrowingLimit per resource (Kubernetes
            quantities), i.e. the most it can ever be admitted for.
    Returns:
        One Problem per offending (field, resource): a resource the ClusterQueue does not cover, or numNodes x the
        per-node value above the usable quota. [] when everything fits. Quantities compare exactly
        (kubernetes.utils.parse_quantity).
    """
    usable = {resource: quantity.parse(amount) for resource, amount in usable_quota.items()}
    problems = []
    for field, values in (("requests", settings.requests), ("limits", settings.limits)):
        for resource, amount in sorted(values.items()):
            total = settings.num_nodes * quantity.parse(amount)
            if resource not in usable:
                if total > 0:
                    problems.append(
                        Problem(
                            _key(field, resource),
                            amount,
                            f"the training ClusterQueue does not cover {resource}, so Kueue can never admit a "
                            "TrainJob of this runtime",
                            f"remove {resource} from the runtime, or add it to the ClusterQueue's coveredResources",
                        )
                    )
                continue
            if total > usable[resource]:
                per_node = quantity.canonical(usable[resource] / settings.num_nodes)
                problems.append(
                    Problem(
                        _key(field, resource),
                        amount,
                        f"numNodes ({settings.num_nodes}) x {amount} = {quantity.canonical(total)} exceeds the training "
                        f"ClusterQueue's usable quota {quantity.canonical(usable[resource])} (nominalQuota + "
                        "borrowingLimit), so Kueue can never admit a TrainJob of this runtime",
                        f"lower it to at most {per_node} per node, or raise the training ClusterQueue's "
                        "borrowingLimit (within the cohort's capacity)",
                    )
                )
    return problems


def trainer_sources(source_dir: Path = TRAINER_SOURCE_DIR) -> dict[str, str]:
    """The entrypoint package as ConfigMap data: {"<file>.py": text} for every .py file of trainer/ (sorted).

    Raises FileNotFoundError if the directory has no __main__.py (the ConfigMap would not be runnable).
    """
    files = {path.name: path.read_text() for path in sorted(Path(source_dir).glob("*.py"))}
    if "__main__.py" not in files:
        raise FileNotFoundError(f"{source_dir} has no __main__.py: the trainer package is missing")
    return files


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
    ] + [{"name": name, "value": value} for name, value in sorted(settings.env.items())]
    container: dict[str, Any] = {
        "name": NODE,
        "image": settings.image,
        "command": list(COMMAND),
        "workingDir": "/workspace",
        "env": env,
        "resources": {"requests": dict(settings.requests), "limits": dict(settings.limits)},
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
            "labels": {FRAMEWORK_LABEL: "torch", **MANAGED_BY},
            "annotations": {
                SAVE_SECONDS_ANNOTATION: _seconds(settings.checkpoint_save_seconds),
                SAVE_STEPS_ANNOTATION: str(settings.save_steps),
            },
        },
        "spec": {
            "mlPolicy": {"numNodes": settings.num_nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {"template": {"spec": pod_spec}},
                            },
                        }
                    ]
                }
            },
        },
    }


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
            "labels": {QUEUE_NAME_LABEL: local_queue, PRIORITY_CLASS_LABEL: priority_class, **MANAGED_BY},
        },
        "spec": spec,
    }


def _object_name(obj: Any, what: str) -> str:
    for attribute in ("name", "object_name"):
        value = getattr(obj, attribute, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"{what} must be an object with a plain-string .name (got {type(obj).__name__})")


# --- Pulumi components -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreemptibleTrainingRuntimeArgs:
    """Inputs of a PreemptibleTrainingRuntime.

    settings: `kueue-cohorts:trainingRuntime` (TrainingRuntimeSettings()).
    checkpoint_volume: the training namespace's CheckpointVolume (its namespace is the runtime's namespace, its
        claim is mounted at settings.checkpoint_mount_path); required: without it a preemption loses the run.
    usable_quota: the training ClusterQueue's nominalQuota + borrowingLimit per resource (Kubernetes quantities);
        the runtime's per-node requests and limits x numNodes must fit in it.
    """

    settings: TrainingRuntimeSettings
    checkpoint_volume: "CheckpointVolume"
    usable_quota: Mapping[str, str]


class PreemptibleTrainingRuntime(pulumi.ComponentResource):
    """The TrainingRuntime plus the ConfigMap carrying its entrypoint, in the checkpoint volume's namespace.

    Children: `{name}-trainer` (core/v1 ConfigMap, the trainer/ package) and `{name}-runtime` (TrainingRuntime
    CustomResource, depending on the ConfigMap and the PVC).
    Attributes: `name` (TrainingRuntime name), `namespace`, `save_steps` (int), `termination_grace_period_seconds`
    (int), `manifest` (the rendered TrainingRuntime dict), `config_map`, `runtime`.
    Raises:
        SettingsError: a per-node request or limit the training ClusterQueue can never admit (nothing is
            registered then).
    """

    def __init__(self, name: str, args: PreemptibleTrainingRuntimeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        settings = args.settings
        problems = quota_problems(settings, args.usable_quota)
        if problems:
            raise SettingsError(problems)
        volume = args.checkpoint_volume
        if "ReadWriteMany" not in tuple(volume.access_modes):
            raise SettingsError(
                [
                    Problem(
                        "checkpoint_volume.access_modes",
                        list(volume.access_modes),
                        "the checkpoint PVC must be ReadWriteMany: every node of a TrainJob and its restarts mount it",
                        "use a ReadWriteMany CheckpointVolume (a cephfs or nfs storage class)",
                    )
                ]
            )
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.name = settings.name
        self.namespace = volume.namespace
        self.save_steps = settings.save_steps
        self.termination_grace_period_seconds = settings.grace_period_seconds
        self.manifest = render_runtime(settings, volume.namespace, volume.claim_name)
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-trainer",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=configmap_name(settings), namespace=volume.namespace, labels=dict(MANAGED_BY)
            ),
            data=trainer_sources(),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.runtime = k8s.apiextensions.CustomResource(
            f"{name}-runtime",
            api_version=self.manifest["apiVersion"],
            kind=self.manifest["kind"],
            metadata=self.manifest["metadata"],
            spec=self.manifest["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.config_map, volume.pvc]),
        )
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "saveSteps": self.save_steps,
                "terminationGracePeriodSeconds": self.termination_grace_period_seconds,
            }
        )


@dataclass(frozen=True)
class TrainJobArgs:
    """Inputs of `train_job`.

    job_name: the TrainJob name (RFC 1035 label; names the run's checkpoint directory).
    runtime: the PreemptibleTrainingRuntime (the TrainJob is created in its namespace and references it).
    local_queue: the training LocalQueue object (anything with a plain-string `.name`); must live in the runtime's
        namespace when it exposes `.namespace` / `.object_namespace`.
    priority_class: the WorkloadPriorityClass object (`.name`).
    num_nodes: spec.trainer.numNodes; None keeps the runtime's.
    """

    job_name: str
    runtime: PreemptibleTrainingRuntime
    local_queue: Any
    priority_class: Any
    num_nodes: Optional[int] = None


def train_job(
    resource_name: str, args: TrainJobArgs, opts: Optional[pulumi.ResourceOptions] = None
) -> k8s.apiextensions.CustomResource:
    """Register a TrainJob of a PreemptibleTrainingRuntime, labelled for the training LocalQueue and priority.

    Returns the TrainJob CustomResource (type token kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob).
    Raises ValueError for a bad job name or a LocalQueue in another namespace; TypeError for objects without .name.
    """
    queue_namespace = getattr(args.local_queue, "namespace", None) or getattr(args.local_queue, "object_namespace", None)
    if isinstance(queue_namespace, str) and queue_namespace != args.runtime.namespace:
        raise ValueError(
            f"LocalQueue {_object_name(args.local_queue, 'local_queue')!r} is in namespace {queue_namespace!r}, the "
            f"runtime in {args.runtime.namespace!r}: a TrainJob is queued by a LocalQueue of its own namespace"
        )
    manifest = render_trainjob(
        args.job_name,
        args.runtime.namespace,
        args.runtime.name,
        _object_name(args.local_queue, "local_queue"),
        _object_name(args.priority_class, "priority_class"),
        args.num_nodes,
    )
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions.merge(pulumi.ResourceOptions(depends_on=[args.runtime.runtime]), opts),
    )
