"""PreemptibleTrainingRuntime: settings, the quota refusal, the rendered TrainingRuntime / TrainJob (checked against
the Trainer v2.2.1 CRDs from the Go module cache), and the component under Pulumi mocks."""
from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import pulumi
import pytest
import yaml
from pydantic import ValidationError

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model import runtime as runtime_manifests
from kueue_cohorts.components.resources import training
from kueue_cohorts.components.resources.checkpoint import CheckpointVolume, CheckpointVolumeArgs
from kueue_cohorts.components.settings import CheckpointSettings
from kueue_cohorts.components.settings import runtime as runtime_settings
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.toolchain import versions
from tests.helpers import run_with_mocks, stack_raw

# The dev stack's runtime: the guide's image and HAMi GPU slice, written in stacks/Pulumi.dev.yaml (no defaults).
GUIDE = {"image": runtime_settings.GUIDE_IMAGE,
         "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                    "nvidia.com/gpumem": "2048"}}

GUIDE_RUNTIME = runtime_settings.TrainingRuntimeSettings

# The guide's published training-runtime.yaml resources (assets/kueue/preemption/training-runtime.yaml).
GUIDE_RESOURCES = {
    "requests": {"cpu": "1", "memory": "2Gi"},
    "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpualloc": 1, "nvidia.com/gpucores": 50,
               "nvidia.com/gpumem": "4096"},
}


# --- settings --------------------------------------------------------------------------------------------------------


def test_defaults_follow_the_guide_and_plan_save_steps_and_grace_period():
    s = GUIDE_RUNTIME(**GUIDE)
    assert s.name == "c12-checkpoint-runtime"
    assert s.save_steps == 100  # 500 s budget / 5 s per step
    assert s.grace_period_seconds == 60  # 30 s save + one 5 s step = 35, raised to the guide's (and policy's) 60
    slow = GUIDE_RUNTIME(**GUIDE, checkpoint_save_seconds=120, seconds_per_step=10)
    assert slow.grace_period_seconds == 130
    assert _runtime_problems({}) == []


def test_camel_case_keys_as_in_the_stack_file():
    s = runtime_settings.TrainingRuntimeSettings.model_validate(
        {"image": "registry.example/trainer:1", "checkpointMountPath": "/mnt/ckpt", "secondsPerStep": 2,
         "maxLostWorkSeconds": 60,
         "checkpointSaveSeconds": 10, "terminationGracePeriodSeconds": 45, "numNodes": 2,
         "imagePullSecrets": ["harbor-mlops-regcred"]}
    )
    assert (s.checkpoint_mount_path, s.save_steps, s.grace_period_seconds, s.num_nodes) == ("/mnt/ckpt", 30, 45, 2)


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"maxLostWorkSeconds": 4, "secondsPerStep": 5}, "max_lost_seconds"),
        ({"savesteps": 100}, "savesteps"),  # typo: unknown keys are refused
        ({"recipe": "no-colon"}, "recipe"),
        ({"checkpointMountPath": "relative/path"}, "checkpointMountPath"),
        ({"limits": {"nvidia.com/gpucores": "-1"}}, "limits"),
        ({"requests": {"cpu": "4"}}, "exceeds limits"),
        ({"env": {"KUEUE_COHORTS_RUN_NAME": "x"}}, "reserved"),
        ({"numNodes": 0}, "numNodes"),
        ({"name": "Not_DNS"}, "name"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(raw, field):
    with pytest.raises(ValidationError) as err:
        runtime_settings.TrainingRuntimeSettings.model_validate({"image": "registry.example/trainer:1", **raw})
    assert field in str(err.value)


def test_settings_are_frozen():
    s = GUIDE_RUNTIME(**GUIDE)
    with pytest.raises(ValidationError):
        s.num_nodes = 3


# --- quota and grace refusals: the rule book on the rendered dev stack (components.checks.validation) -----------------


def _runtime_problems(runtime: dict) -> list:
    """(key, value, rule, fix) of every problem of the dev stack with `runtime`'s keys set on its trainingRuntime."""
    raw = stack_raw("dev")
    raw["trainingRuntime"] = {**raw["trainingRuntime"], **runtime}
    try:
        load_settings(raw)
    except SettingsError as err:
        return list(err.problems)
    return []


def test_the_guides_runtime_is_refused_naming_field_value_rule_and_fix():
    problems = _runtime_problems(GUIDE_RESOURCES)
    assert [(p.key, p.value) for p in problems] == [
        ('kueue-cohorts:trainingRuntime.limits["nvidia.com/gpucores"]', 50),
        ('kueue-cohorts:trainingRuntime.limits["nvidia.com/gpumem"]', "4096"),
    ]
    assert "can ever use, 20 (nominalQuota + borrowingLimit)" in problems[0].rule
    assert problems[0].fix.startswith("lower it to at most 20 per node")
    assert "can ever use, 2048" in problems[1].rule


@pytest.mark.parametrize("grace, save", [(20, 30), (30, 30), (59, 10)])
def test_a_grace_period_not_above_the_save_time_or_below_the_minimum_is_refused(grace, save):
    (problem,) = _runtime_problems({"terminationGracePeriodSeconds": grace, "checkpointSaveSeconds": save})
    assert (problem.key, problem.value) == ("kueue-cohorts:trainingRuntime.terminationGracePeriodSeconds", grace)
    assert problem.fix == f"set terminationGracePeriodSeconds to at least 60 and above the declared checkpoint save " \
                          f"time of {save} seconds"


def test_quantities_compare_by_value_not_by_text():
    assert _runtime_problems({"requests": {"memory": "8192Mi"}, "limits": {"memory": "8Gi"}}) == []
    problems = _runtime_problems({"requests": {"memory": "8193Mi"}, "limits": {"memory": "9Gi"}})
    assert [p.key for p in problems] == ["kueue-cohorts:trainingRuntime.requests.memory"]


def test_num_nodes_multiplies_the_per_node_request():
    keys = {p.key for p in _runtime_problems({"numNodes": 2})}
    # 2 x gpualloc 1 > 1, 2 x gpucores 20 > 20, 2 x gpumem 2048 > 2048; cpu 2 x 1 and memory 2 x 2Gi fit
    assert keys == {
        f'kueue-cohorts:trainingRuntime.limits["nvidia.com/{r}"]' for r in ("gpualloc", "gpucores", "gpumem")
    }


def test_a_resource_the_cluster_queue_does_not_cover_is_refused():
    (problem,) = _runtime_problems({"limits": {"cpu": "1", "nvidia.com/gpu": "1"}})
    assert problem.key == 'kueue-cohorts:trainingRuntime.limits["nvidia.com/gpu"]'
    assert "covers no 'nvidia.com/gpu'" in problem.rule


# --- rendered TrainingRuntime ----------------------------------------------------------------------------------------


def _container(manifest):
    (job,) = manifest["spec"]["template"]["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return job, pod, container


def test_runtime_has_the_trainer_v2_2_shape():
    m = runtime_manifests.render_runtime(GUIDE_RUNTIME(**GUIDE), "c12-training", "c12-ckpt")
    assert (m["apiVersion"], m["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime")
    assert m["metadata"]["namespace"] == "c12-training"
    assert m["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    assert m["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}  # no numProcPerNode since v2.2
    job, pod, container = _container(m)
    assert job["name"] == "node"
    assert job["template"]["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    assert container["name"] == "node"
    assert pod["terminationGracePeriodSeconds"] == 60
    assert m["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] == "30"


def test_runtime_execs_python_directly_so_it_is_pid_1():
    _, _, container = _container(
        runtime_manifests.render_runtime(GUIDE_RUNTIME(**GUIDE), "ns", "pvc")
    )
    assert container["command"] == ["python", "-m", "trainer"]
    assert "args" not in container  # no `bash -c` wrapper anywhere


def test_runtime_mounts_the_rwx_claim_and_scopes_checkpoints_by_trainjob_name():
    s = GUIDE_RUNTIME(**GUIDE, checkpoint_mount_path="/mnt/ckpt/")
    _, pod, container = _container(runtime_manifests.render_runtime(s, "ns", "c12-ckpt"))
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["checkpoints"]["persistentVolumeClaim"] == {"claimName": "c12-ckpt"}
    assert volumes["trainer"]["configMap"]["name"] == "c12-checkpoint-runtime-trainer"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["checkpoints"] == "/mnt/ckpt"
    assert mounts["trainer"] == "/opt/kueue-cohorts/trainer"
    env = {e["name"]: e for e in container["env"]}
    assert env["KUEUE_COHORTS_CHECKPOINT_ROOT"]["value"] == "/mnt/ckpt"
    # The Trainer names the JobSet after the TrainJob; the JobSet controller labels every pod with it.
    assert env["KUEUE_COHORTS_RUN_NAME"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}}
    assert env["KUEUE_COHORTS_SAVE_STEPS"]["value"] == "100"
    assert env["PYTHONPATH"]["value"] == "/opt/kueue-cohorts"
    assert not [name for name in env if name.startswith("PET_")]  # reserved by the Trainer's torch plugin


def test_runtime_resources_and_pull_secrets_come_from_settings():
    s = runtime_settings.TrainingRuntimeSettings.model_validate(
        {"image": runtime_settings.GUIDE_IMAGE, **GUIDE_RESOURCES, "imagePullSecrets": ["harbor-mlops-regcred"]}
    )
    _, pod, container = _container(runtime_manifests.render_runtime(s, "ns", "pvc"))
    assert container["resources"]["limits"]["nvidia.com/gpucores"] == "50"
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert pod["imagePullSecrets"] == [{"name": "harbor-mlops-regcred"}]


def test_configmap_carries_the_whole_entrypoint_package():
    data = runtime_manifests.trainer_sources()
    assert {"__main__.py", "entrypoint.py", "checkpoints.py", "preemption.py", "callback.py", "demo.py"} <= set(data)
    assert all(not name.startswith("test") for name in data)


# --- conformance with the pinned Trainer CRDs ------------------------------------------------------------------------


@cache
def _crd_schema(plural: str) -> dict:
    (path,) = [p for p in toolchain.crd_files("trainer") if p.name == f"trainer.kubeflow.org_{plural}.yaml"]
    crd = yaml.safe_load(path.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


_TYPES = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}


def _pruned_or_mistyped(value, schema, path="") -> list[str]:
    """Paths the API server would prune (unknown fields) or reject for type, per the structural schema."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string"):
        return []
    errors = []
    expected = _TYPES.get(schema.get("type"))
    if expected and not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return [f"{path}: {type(value).__name__} where the schema says {schema.get('type')}"]
    if isinstance(value, dict):
        props = schema.get("properties")
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}.{key}: required")
        for key, child in value.items():
            if props is not None and key in props:
                errors += _pruned_or_mistyped(child, props[key], f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += _pruned_or_mistyped(child, schema["additionalProperties"], f"{path}.{key}")
            elif props is not None or path.count(".") > 0:
                errors.append(f"{path}.{key}: unknown field (pruned)")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            errors += _pruned_or_mistyped(item, schema.get("items", {}), f"{path}[{index}]")
    return errors


def test_rendered_runtime_conforms_to_the_trainer_v2_2_1_crd():
    s = runtime_settings.TrainingRuntimeSettings.model_validate({"image": "registry.example/trainer:1",
                                                                 "imagePullSecrets": ["x"], "env": {"EXTRA": "1"}})
    manifest = runtime_manifests.render_runtime(s, "c12-training", "c12-ckpt")
    assert _pruned_or_mistyped(manifest["spec"], _crd_schema("trainingruntimes")["properties"]["spec"], "spec") == []


def test_the_schema_check_catches_the_guides_numprocpernode():
    # The published asset's `torch: {numProcPerNode: auto}` would be pruned by a v2.2.1 API server.
    manifest = runtime_manifests.render_runtime(GUIDE_RUNTIME(**GUIDE), "ns", "pvc")
    manifest["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": "auto"}
    assert _pruned_or_mistyped(manifest["spec"], _crd_schema("trainingruntimes")["properties"]["spec"], "spec") == [
        "spec.mlPolicy.torch.numProcPerNode: unknown field (pruned)"]


def test_rendered_trainjob_conforms_and_carries_queue_and_priority_labels():
    m = runtime_manifests.render_trainjob(
        "c12-training-run",
        "c12-training",
        "c12-checkpoint-runtime",
        "c12-training-lq",
        "c12-training-prio",
        num_nodes=1,
    )
    assert m["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "c12-training-lq"
    assert m["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "c12-training-prio"
    assert m["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                                       "name": "c12-checkpoint-runtime"}
    assert _pruned_or_mistyped(m["spec"], _crd_schema("trainjobs")["properties"]["spec"], "spec") == []


@pytest.mark.parametrize("name", ["Upper", "1starts-with-digit", "x" * 64, "ends-"])
def test_trainjob_name_must_be_an_rfc1035_label(name):
    with pytest.raises(ValueError):
        runtime_manifests.render_trainjob(name, "ns", "rt", "lq", "prio")


# --- the component under Pulumi mocks --------------------------------------------------------------------------------


def _volume() -> CheckpointVolume:
    return CheckpointVolume("ckpt", CheckpointVolumeArgs("c12-training", CheckpointSettings(claim_name="c12-ckpt")))


def _runtime_args(settings: runtime_settings.TrainingRuntimeSettings) -> training.PreemptibleTrainingRuntimeArgs:
    return training.PreemptibleTrainingRuntimeArgs(settings, _volume())


def test_component_registers_configmap_and_runtime_as_parented_children():
    built = {}

    def build():
        runtime = training.PreemptibleTrainingRuntime(
            "c12", _runtime_args(GUIDE_RUNTIME(**GUIDE)))
        built["runtime"] = runtime
        pulumi.Output.all(runtime.config_map.urn, runtime.runtime.urn).apply(lambda urns: built.update(urns=urns))
        lq = SimpleNamespace(name="c12-training-lq", namespace="c12-training")
        training.train_job(
            "job",
            training.TrainJobArgs("c12-run", runtime, lq, SimpleNamespace(name="c12-training-prio")),
            pulumi.ResourceOptions(parent=runtime),
        )

    mocks = run_with_mocks(build)
    by_type = {}
    for r in mocks.registered:
        by_type.setdefault(r.typ, []).append(r)
    (component,) = by_type["kueue-cohorts:training:PreemptibleTrainingRuntime"]
    assert component.name == "c12"
    (cm,) = by_type["kubernetes:core/v1:ConfigMap"]
    assert cm.name == "c12-trainer"
    assert cm.inputs["metadata"]["name"] == "c12-checkpoint-runtime-trainer"
    assert cm.inputs["data"] == runtime_manifests.trainer_sources()
    (rt,) = by_type["kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime"]
    assert rt.name == "c12-runtime"
    assert rt.inputs["spec"] == built["runtime"].manifest["spec"]
    (job,) = by_type["kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"]
    assert job.inputs["metadata"]["namespace"] == "c12-training"
    assert job.inputs["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "c12-training-lq"
    runtime = built["runtime"]
    assert (runtime.name, runtime.namespace, runtime.save_steps, runtime.termination_grace_period_seconds) == (
        "c12-checkpoint-runtime", "c12-training", 100, 60)
    # Children are parented: the engine qualifies a child's URN type with its parent's type.
    for urn in built["urns"]:
        assert "::kueue-cohorts:training:PreemptibleTrainingRuntime$kubernetes:" in urn


def test_train_job_refuses_a_local_queue_of_another_namespace():
    def build():
        runtime = training.PreemptibleTrainingRuntime(
            "c12", _runtime_args(GUIDE_RUNTIME(**GUIDE)))
        training.train_job("job", training.TrainJobArgs(
            "run", runtime, SimpleNamespace(name="lq", namespace="elsewhere"), SimpleNamespace(name="p")))

    with pytest.raises(ValueError, match="namespace 'elsewhere'"):
        run_with_mocks(build)


# --- the policy pack's view ------------------------------------------------------------------------------------------


def test_default_runtime_passes_the_policy_packs_checkpoint_safe_runtime_rule():
    from kueue_cohorts.policy.rules.checkpoint_safe_runtime import check_checkpoint_safe_runtime
    from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject

    def obj(manifest):
        group, _, version = manifest["apiVersion"].rpartition("/")
        return KubeObject("", manifest["metadata"]["name"], group, version, manifest["kind"], manifest)

    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "c12-ckpt", "namespace": "c12-training"},
           "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "5Gi"}}}}
    runtime = runtime_manifests.render_runtime(GUIDE_RUNTIME(**GUIDE), "c12-training", "c12-ckpt")
    job = runtime_manifests.render_trainjob(
        "run", "c12-training", "c12-checkpoint-runtime", "c12-training-lq", "c12-training-prio"
    )
    assert check_checkpoint_safe_runtime([obj(runtime), obj(pvc), obj(job)]) == []
    # and the rule does read what the component declares: a grace period under the policy's minimum fails
    short = runtime_manifests.render_runtime(
        GUIDE_RUNTIME(**GUIDE, termination_grace_period_seconds=31), "c12-training", "c12-ckpt"
    )
    (violation,) = check_checkpoint_safe_runtime([obj(short), obj(pvc)])
    assert "checkpoint save time of 30 seconds" in violation.message
    assert violation.field.endswith(".terminationGracePeriodSeconds")


# --- how the TrainJob name reaches the pod (upstream source at the pinned versions) ---------------------------------


def _module_source(entry: str, relative: str) -> str:
    src = versions.load().crds[entry]  # the pinned module versions of versions.toml [crds]
    return (toolchain.module_dir(src.module, src.version) / relative).read_text()


def test_the_trainer_names_the_jobset_after_the_trainjob():
    source = _module_source("trainer", "pkg/runtime/framework/plugins/jobset/jobset.go")
    assert "jobsetv1alpha2ac.JobSet(trainJob.Name, trainJob.Namespace)" in source


def test_the_jobset_controller_labels_every_pod_with_the_jobset_name():
    types = _module_source("jobset", "api/jobset/v1alpha2/jobset_types.go")
    assert f'JobSetNameKey         string = "{runtime_manifests.JOBSET_NAME_LABEL}"' in types
    controller = _module_source("jobset", "pkg/controllers/jobset_controller.go")
    assert "labels[jobset.JobSetNameKey] = js.Name" in controller
    assert "labelAndAnnotateObject(&job.Spec.Template, js, rjob, jobIdx)" in controller  # the pod template


@pytest.mark.parametrize("path", ["/", "/workspace", "/workspace/ckpt", "/opt", "/opt/kueue-cohorts",
                                  "/opt/kueue-cohorts/trainer/x", "/dev", "/dev/shm", "/mnt/../workspace",
                                  "/mnt/ckpt/../../opt"])
def test_a_mount_path_over_the_trainers_code_or_workdir_is_refused(path):
    """Issue 16 (3): the checkpoint volume must not hide the trainer's code, its working directory or /dev/shm."""
    (problem,) = _runtime_problems({"checkpointMountPath": path})
    assert (problem.key, problem.value) == ("kueue-cohorts:trainingRuntime.checkpointMountPath", path)
    assert problem.fix == "mount the checkpoints on a path of their own, such as /mnt/checkpoints"


@pytest.mark.parametrize("path", ["/mnt/checkpoints", "/mnt/ckpt/", "/data/runs", "/workspaces", "/opt/other"])
def test_a_mount_path_of_its_own_is_accepted(path):
    assert _runtime_problems({"checkpointMountPath": path}) == []


SYSTEM_MOUNTS = ["/etc", "/etc/ssl", "/proc", "/proc/self", "/sys/fs", "/dev/ckpt", "/tmp", "/tmp/ckpt",
                 "/usr/lib/python3", "/usr/local", "/bin", "/sbin", "/lib", "/lib64", "/libx32/x", "/boot", "/run",
                 "/var/run", "/var/lib/ckpt", "/root", "/root/.cache", "/home", "/home/trainer", "//etc",
                 "/etc/", "/./usr/lib"]


@pytest.mark.parametrize("path", SYSTEM_MOUNTS)
def test_a_mount_path_in_a_system_directory_is_refused_by_rule(path):
    """Issue 28 finding 7: a system directory of the image (by top-level directory, runtime_settings.SYSTEM_DIRS and
    every /lib*) never takes the checkpoint volume."""
    (problem,) = _runtime_problems({"checkpointMountPath": path})
    assert (problem.key, problem.value) == ("kueue-cohorts:trainingRuntime.checkpointMountPath", path)
    assert "a system directory of the image" in problem.rule
    assert problem.fix == "mount the checkpoints on a path of their own, such as /mnt/checkpoints"


@pytest.mark.parametrize("path", ["/mnt/checkpoints", "/data", "/srv/ckpt", "/checkpoints", "/media/runs",
                                  "/library", "/etcetera", "/homes/ckpt", "/variable", "/usrdata"])
def test_paths_that_only_look_like_system_ones_are_accepted(path):
    assert _runtime_problems({"checkpointMountPath": path}) == []


@pytest.mark.parametrize("env, port", [({}, "9464"), ({"KUEUE_COHORTS_METRICS_PORT": ""}, ""),
                                       ({"KUEUE_COHORTS_METRICS_PORT": "9100"}, "9100")])
def test_the_trainers_metrics_are_served_by_default_on_a_labelled_pod(env, port):
    """Issue 37: the runtime sets KUEUE_COHORTS_METRICS_PORT (unless trainingRuntime.env sets it: "" turns the
    metrics off), names the container port `metrics`, and labels the pods for the stack's PodMonitor."""
    m = runtime_manifests.render_runtime(GUIDE_RUNTIME(**GUIDE, env=env), "c12-training", "c12-ckpt")
    job, pod, container = _container(m)
    values = [e.get("value") for e in container["env"] if e["name"] == "KUEUE_COHORTS_METRICS_PORT"]
    assert values == [port]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9464, "protocol": "TCP"}]
    template = job["template"]["spec"]["template"]
    assert template["metadata"]["labels"] == {"kueue-cohorts/metrics": "trainer"}
