"""Issue 44: the kubelet's own part of a preemption, run for real on the sandbox's real node (``kueue-cohorts sandbox
up --real-node``: containerd, runc and a kubelet of the pinned versions, beside the kwok nodes).

What kwok only models (tests/e2e/test_08_*: a deleted pod keeps its node for its grace period, then ends with the
declared exit code), the kubelet does here: a deleted pod's container gets SIGTERM as PID 1 of its own PID namespace,
may take its ``terminationGracePeriodSeconds`` to stop, and its exit code and termination message are what the
kubelet reports. And the runtime's rule "exec form, no shell wrapper" (components/model/runtime.py COMMAND:
``python`` is PID 1) is shown once by its harm: behind ``sh -c`` the SIGTERM reaches the shell, which as PID 1 with no
handler ignores it, and the process that would save is SIGKILLed at the end of the grace period without a word.

And the guide's whole story once: the dev stack's TrainingRuntime (as ``pulumi up`` applied it) runs the real trainer
(its default demo recipe, a tiny GPT-2 with torch from the project venv) in a TrainJob that borrows the inference
quota, put on the real node by a runtimePatch (nodeSelector and toleration) and the host-python image; an inference
Deployment reclaims the quota; the kubelet delivers SIGTERM with the runtime's 60 s grace period; the trainer saves
and exits with its preemption code; once inference scales to 0 Kueue admits it again and it resumes from the
checkpoint of the very step it stopped at (0 steps lost; an uninterrupted run would have gone through that step
once, as this one does). The checkpoint volume is the stack's claim as kwok's provisioner binds it, a hostPath PV:
on one node it stands in for the RWX volume of a real cluster.

And the runtime's other two rules once each, by their harm and tied to the rule book's finding on the very runtime
object the pod is made from: a preStop hook that spends the grace period gets a trainer whose save takes the
declared 30 s SIGKILLed in the middle of it (exit 137, the steps since its last periodic checkpoint lost, where the
runtime as applied saves and loses 0), and a read-only checkpoint mount leaves the trainer unable to write its
progress marker at step 1 (exit 1, nothing kept).

The real node is started by this module only (its binaries are built on first use: toolchain group real-node), and
stopped again at its end, so the other e2e tests see the sandbox without it.
"""
from __future__ import annotations

import copy
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    REPO,
    SLICE,
    TRAINER,
    Cluster,
    delete_trainjob_and_deployment,
    start_sandbox,
    wait_for,
)
from kubernetes import client as k8s
from kubernetes import watch

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.runtime import NODE, PREEMPTED_EXIT_CODE, TRAINER_PARENT, render_trainjob
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import CHECKPOINT_ROOT_ENV, check_checkpoint_safe_runtime
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject
from kueue_cohorts.policy.rules.vocabulary.values import Violation
from kueue_cohorts.sandbox import realnode
from kueue_cohorts.sandbox.cluster import Sandbox
from kueue_cohorts.trainer.checkpoints import list_checkpoints, newest_complete
from kueue_cohorts.trainer.metrics import PROGRESS_FILE, read_progress, steps_lost

NAMESPACE = "real-node-e2e"
#: Per-test limit here (the suite's is 900 s, tests/e2e/conftest.py): the first test of this module builds the real
#: node's binaries when they are not cached (toolchain group real-node, about 600 s of wall time measured on the
#: loaded 2-core machine, docs/toolchain.md). A decorator's mark is the one pytest-timeout reads, before the suite's.
REAL_NODE_TIMEOUT_S = 1800
#: A process that says it is ready (a file its readiness probe reads) and, on SIGTERM, writes who received it to the
#: termination message and exits with the trainer's preemption code (PREEMPTED_EXIT_CODE), as the trainer does after
#: its stop save.
STOPPABLE = f"EXIT_CODE = {PREEMPTED_EXIT_CODE}\n" + """
import os, signal, sys, time
def stop(signum, frame):
    with open("/dev/termination-log", "w") as log:
        log.write(f"signal {signum} to pid {os.getpid()} uid {os.getuid()}")
    sys.exit(EXIT_CODE)
signal.signal(signal.SIGTERM, stop)
open("/tmp/ready", "w").close()
while True:
    time.sleep(0.2)
"""


@pytest.fixture(scope="module")
def real_node(sandbox: Sandbox, cluster: Cluster):
    """The sandbox with its real node up (``up --real-node`` through the CLI entry point on the running sandbox);
    stopped, and its Node deleted, when the module ends."""
    start_sandbox(sandbox, "--real-node")
    cluster.ensure_namespace(NAMESPACE)
    yield realnode.NODE_NAME
    sandbox.stop_real_node()
    cluster.core.delete_namespace(NAMESPACE)


def _pod(name: str, command: list[str], grace: int) -> k8s.V1Pod:
    container = k8s.V1Container(
        name="main", image=realnode.HOST_PYTHON_IMAGE, image_pull_policy="Never", command=command,
        readiness_probe=k8s.V1Probe(_exec=k8s.V1ExecAction(command=["cat", "/tmp/ready"]), period_seconds=1),
        security_context=k8s.V1SecurityContext(allow_privilege_escalation=False,
                                               capabilities=k8s.V1Capabilities(drop=["ALL"])))
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, namespace=NAMESPACE),
        spec=k8s.V1PodSpec(
            containers=[container], restart_policy="Never", termination_grace_period_seconds=grace,
            node_selector={realnode.NODE_LABEL[0]: realnode.NODE_LABEL[1]},
            tolerations=[k8s.V1Toleration(key=realnode.TAINT_KEY, operator="Exists", effect="NoSchedule")],
            security_context=k8s.V1PodSecurityContext(run_as_non_root=True, run_as_user=65534, run_as_group=65534)))


def _run_and_delete(cluster: Cluster, pod: k8s.V1Pod) -> tuple[k8s.V1ContainerStateTerminated, float, float]:
    """Create ``pod``, wait until it runs on the real node and is ready, delete it (its own grace period), and
    return the container's terminated state as the kubelet reported it, the seconds from the delete request to that
    report and to the pod object being gone."""
    name = pod.metadata.name
    cluster.core.create_namespaced_pod(NAMESPACE, pod)

    def ready() -> bool:
        got = cluster.core.read_namespaced_pod(name, NAMESPACE)
        statuses = got.status.container_statuses or []
        return bool(statuses and statuses[0].ready)

    wait_for(ready, 120, f"pod {name} ready on the real node")
    assert cluster.core.read_namespaced_pod(name, NAMESPACE).spec.node_name == realnode.NODE_NAME
    stream = watch.Watch()
    start = time.monotonic()
    cluster.core.delete_namespaced_pod(name, NAMESPACE)
    terminated, reported_s = None, 0.0
    for event in stream.stream(cluster.core.list_namespaced_pod, NAMESPACE, field_selector=f"metadata.name={name}",
                               timeout_seconds=120):
        got = event["object"]
        statuses = got.status.container_statuses or []
        if terminated is None and statuses and statuses[0].state.terminated is not None:
            terminated, reported_s = statuses[0].state.terminated, time.monotonic() - start
        if event["type"] == "DELETED":
            stream.stop()
    gone_s = time.monotonic() - start
    assert terminated is not None, f"the kubelet never reported pod {name}'s container terminated"
    return terminated, reported_s, gone_s


@pytest.mark.timeout(REAL_NODE_TIMEOUT_S)
def test_the_kubelet_sends_sigterm_to_pid_1_which_exits_with_its_preemption_code(cluster, real_node):
    terminated, reported_s, gone_s = _run_and_delete(cluster, _pod("exec-form", ["python", "-c", STOPPABLE], 30))
    print(f"\nexec form: terminated reported {reported_s:.1f} s, pod gone {gone_s:.1f} s after the delete")
    assert terminated.exit_code == PREEMPTED_EXIT_CODE
    assert terminated.message == "signal 15 to pid 1 uid 65534"


@pytest.mark.timeout(REAL_NODE_TIMEOUT_S)
def test_behind_a_shell_wrapper_the_signal_is_lost_and_the_process_is_killed_at_the_grace_period(cluster, real_node):
    # `; echo` keeps sh from exec'ing python: the wrapper of a `command: [sh, -c, "python train.py; ..."]`.
    wrapped = ["sh", "-c", f"python -c '{STOPPABLE}'; echo wrapper done"]
    terminated, reported_s, gone_s = _run_and_delete(cluster, _pod("shell-wrapper", wrapped, 5))
    print(f"\nshell wrapper: terminated reported {reported_s:.1f} s, pod gone {gone_s:.1f} s after the delete")
    assert terminated.exit_code == 137  # SIGKILL at the end of the grace period: no save, no preemption code
    assert not terminated.message


# ----- the whole story: the stack's TrainingRuntime runs the real trainer on the real node -----------------------

TRAINING_NS, INFERENCE_NS = "c12-training", "c12-inference"
JOB_NAME = "real-node-tj"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _training_pods(cluster: Cluster) -> list:
    pods = cluster.core.list_namespaced_pod(TRAINING_NS, label_selector=f"{JOBSET_NAME_LABEL}={JOB_NAME}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _log_lines(sandbox: Sandbox, pod: k8s.V1Pod) -> list[str]:
    """The container log of ``pod`` as the real node's containerd wrote it (CRI format; the apiserver has no client
    certificate for the kubelet, so ``kubectl logs`` cannot read it)."""
    found = sorted((sandbox.real_node_paths().pod_logs).glob(
        f"{pod.metadata.namespace}_{pod.metadata.name}_{pod.metadata.uid}/*/*.log"))
    return [line.split(" ", 3)[-1] for path in found for line in path.read_text().splitlines()]


def _checkpoint_dir(cluster: Cluster, request: pytest.FixtureRequest) -> Path:
    """The host directory behind the dev stack's checkpoint claim, made writable for the trainer and removed when
    the test ends. kwok's provisioner makes a hostPath PV (its volume stage): on one real node it stands in for the
    RWX volume. The kubelet creates a missing hostPath directory as root 0755; the trainer runs as 65534 (the
    runtime's runAsUser), and fsGroup does not apply to hostPath, so the directory is made writable first."""
    claim = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml").inference_training.training.checkpoint.claim_name
    pvc = wait_for(lambda: (c := cluster.core.read_namespaced_persistent_volume_claim(claim, TRAINING_NS))
                   .status.phase == "Bound" and c, 60, f"the checkpoint claim {claim} to be bound")
    host_dir = Path(cluster.core.read_persistent_volume(pvc.spec.volume_name).spec.host_path.path)
    host_dir.mkdir(parents=True, exist_ok=True)
    host_dir.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(host_dir, ignore_errors=True))
    return host_dir


@pytest.fixture
def clean_real_trainjob(cluster, dev_stack):
    """Delete the test's TrainJob and inference Deployment afterwards; wait until their Pods are gone."""
    yield
    delete_trainjob_and_deployment(cluster, JOB_NAME, TRAINING_NS, "serve-rn", INFERENCE_NS, 180)
    wait_for(lambda: not cluster.core.list_namespaced_pod(TRAINING_NS,
                                                          label_selector=f"{JOBSET_NAME_LABEL}={JOB_NAME}").items,
             180, "the TrainJob's Pods to be gone")


@pytest.mark.timeout(REAL_NODE_TIMEOUT_S)
def test_the_real_trainer_is_reclaimed_saves_on_sigterm_and_resumes_with_no_step_lost(
        sandbox, cluster, real_node, dev_stack, clean_real_trainjob, request):
    settings = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
    runtime = settings.training_runtime
    host_dir = _checkpoint_dir(cluster, request)

    manifest = render_trainjob(JOB_NAME, TRAINING_NS, runtime.name, "c12-training-lq", "c12-training-prio")
    manifest["spec"]["trainer"] = {"image": realnode.HOST_PYTHON_IMAGE,
                                   "env": [{"name": "KUEUE_COHORTS_DEMO_MAX_STEPS", "value": "1000000"}]}
    pod_patch = {"nodeSelector": {realnode.NODE_LABEL[0]: realnode.NODE_LABEL[1]},
                 "tolerations": [{"key": realnode.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]}
    manifest["spec"]["runtimePatches"] = [{"manager": "kueue-cohorts.e2e/real-node", "trainingRuntimeSpec": {
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "spec": pod_patch}}}}]}}}}]
    cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", manifest)

    first = wait_for(lambda: [p for p in _training_pods(cluster) if p.status.phase == "Running"], 300,
                     "the trainer pod to run on the real node")[0]
    assert first.spec.node_name == realnode.NODE_NAME
    run_dir = host_dir / JOB_NAME
    wait_for(lambda: list(run_dir.glob("checkpoint-*")), 300, f"the trainer's first checkpoint in {run_dir}")

    labels = {"app": "serve-rn", QUEUE_LABEL: "c12-inference-lq", PRIORITY_LABEL: "c12-inference-prio"}
    deployment = k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="serve-rn", namespace=INFERENCE_NS),
        spec=k8s.V1DeploymentSpec(
            replicas=1, selector=k8s.V1LabelSelector(match_labels={"app": "serve-rn"}),
            strategy=k8s.V1DeploymentStrategy(type="RollingUpdate", rolling_update=k8s.V1RollingUpdateDeployment(
                max_surge=0, max_unavailable=1)),
            template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=k8s.V1PodSpec(
                containers=[k8s.V1Container(name="predictor", image="registry.invalid/serve:never-pulled",
                                            resources=k8s.V1ResourceRequirements(requests=dict(SLICE),
                                                                                 limits=dict(SLICE)))],
                termination_grace_period_seconds=0))))
    apps = k8s.AppsV1Api(cluster.api)
    start = time.monotonic()
    apps.create_namespaced_deployment(INFERENCE_NS, deployment)

    # The log is read while the pod stops, not after: once the kubelet has reported the exit, the Job controller's
    # delete completes and the kubelet removes the pod's log directory with its containers (Kubernetes v1.36.3
    # pkg/kubelet/kuberuntime/kuberuntime_gc.go evictPodLogsDirectories), which can be before the inference pod runs.
    first_log: list[str] = []

    def terminated() -> k8s.V1ContainerStateTerminated | None:
        try:
            pod = cluster.core.read_namespaced_pod(first.metadata.name, TRAINING_NS)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        statuses = pod.status.container_statuses or []
        first_log[:] = _log_lines(sandbox, first) or first_log
        return statuses[0].state.terminated if statuses and statuses[0].state.terminated else None

    stopped = wait_for(terminated, runtime.grace_period_seconds + 120, "the trainer to stop", interval=0.1)
    stopped_s = time.monotonic() - start

    def inference_running() -> bool:
        pods = cluster.core.list_namespaced_pod(INFERENCE_NS, label_selector="app=serve-rn").items
        return any(p.status.phase == "Running" for p in pods)

    wait_for(inference_running, runtime.grace_period_seconds + 120, "the inference pod to run")
    inference_s = time.monotonic() - start
    print(f"\nreal trainer: stopped {stopped_s:.1f} s and the inference pod Running {inference_s:.1f} s after the "
          f"inference Deployment was created (grace period {runtime.grace_period_seconds} s)")
    assert stopped.exit_code == PREEMPTED_EXIT_CODE, "\n".join(first_log[-20:])
    stop_lines = [line for line in first_log if "preempted: stopped at global step" in line]
    assert len(stop_lines) == 1, "\n".join(["no one stop line in the log; its last lines:", *first_log[-20:]])
    stop_line = stop_lines[0]
    step = int(stop_line.split("global step ", 1)[1].split()[0])
    assert f"with checkpoint-{step} complete" in stop_line, stop_line
    assert (run_dir / f"checkpoint-{step}").is_dir()

    apps.patch_namespaced_deployment_scale("serve-rn", INFERENCE_NS, {"spec": {"replicas": 0}})
    second = wait_for(lambda: [p for p in _training_pods(cluster)
                               if p.status.phase == "Running" and p.metadata.uid != first.metadata.uid], 300,
                      "the trainer to run again on the real node")[0]
    assert second.spec.node_name == realnode.NODE_NAME
    resumed = wait_for(lambda: [line for line in _log_lines(sandbox, second) if "resuming from" in line], 300,
                       "the trainer to resume")
    print(f"first attempt: {stop_line}\nsecond attempt: {resumed[0]}")
    assert resumed[0].endswith(f"checkpoint-{step} at global step {step}"), resumed[0]
    assert not [line for line in _log_lines(sandbox, second) if "lost at its preemption" in line]


# ----- the runtime's other rules, each shown once by its harm: a preStop hook, a read-only checkpoint mount --------
#
# A TrainJob's pod is the runtime's trainer pod template as the Job controller creates it; on a reclaim the Job
# controller deletes it (Kubernetes v1.36.3 pkg/controller/job/job_controller.go deleteJobPods) and from there on
# everything that decides whether the save lands is the kubelet's: it runs the preStop hook, sends SIGTERM and
# SIGKILLs at the end of the grace period (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer), and
# mounts the volumes as the template says (pkg/kubelet/volumemanager, the mount's readOnly). So these tests run the
# applied runtime's trainer pod template as a bare Pod, deleted as the Job controller would, which is the same
# kubelet path without the minute of Kueue, JobSet and Trainer round trips the whole story above already shows. What
# the bare Pod changes is where it runs (the real node's image, nodeSelector and toleration, as the story's
# runtimePatch does) and no resources (two trainers at once on the one real node; a TrainJob's come from Kueue's
# admission). The rule book judges the very runtime object each pod is made from, with the claim as applied.

#: Label of the pods of these tests (the run name), for the watch that collects their ends.
HARM_LABEL = "kueue-cohorts.e2e/harm"
#: Seconds of the grace period the harmful preStop hook leaves the trainer: less than its save takes.
PRESTOP_LEFT_S = 5
#: The trainer pod template's field path in a runtime (policy/rules/vocabulary/trainer.py trainer_jobs).
POD_PATH = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"
SLOW_SAVE_CONFIGMAP = "real-node-slow-save"
#: The preStop test's save interval in steps: no periodic save within the test. With the stack's 100 steps, a 30 s
#: periodic save begun near the delete would end 30 s later and the next one near the grace period's end (60 s), a
#: race with the SIGKILL decided by how fast the demo's steps are; without them only the stop save decides.
NO_PERIODIC_SAVE = 1_000_000
#: The demo recipe (trainer.demo, the runtime's default) with a save as long as the runtime declares
#: (`kueue-cohorts/checkpoint-save-seconds`) instead of the tiny model's 0.1 s: it waits before the Trainer writes the
#: model, so during the wait checkpoint-<step> is not there and cannot be resumed from. A stand-in for a model whose
#: save takes that long; the save the kubelet can interrupt is the same. Mounted from a ConfigMap as a module next to
#: the runtime's trainer package (PYTHONPATH).
SLOW_SAVE = """import time
from transformers import Trainer
from trainer.demo import build_trainer as demo_trainer
class SlowSaveTrainer(Trainer):
    def save_model(self, output_dir=None, _internal_call=False):
        if _internal_call:
            time.sleep(SAVE_SECONDS)
        super().save_model(output_dir, _internal_call)
def build_trainer(output_dir):
    return demo_trainer(output_dir, trainer_class=SlowSaveTrainer)
"""


def _applied_runtime(cluster: Cluster) -> dict[str, Any]:
    """The dev stack's TrainingRuntime as ``pulumi up`` applied it (read from the apiserver)."""
    name = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml").training_runtime.name
    runtime: dict[str, Any] = cluster.custom.get_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainingruntimes",
                                                                          name)
    return runtime


def _trainer_container(runtime: dict[str, Any]) -> dict[str, Any]:
    """The trainer container (``node``) of a runtime manifest's trainer pod template, for editing in place."""
    (job,) = [j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == NODE]
    (container,) = [c for c in job["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == NODE]
    return container


def _judged(cluster: Cluster, runtime: dict[str, Any]) -> list[Violation]:
    """The rule book's CHECKPOINT_SAFE_RUNTIME findings on ``runtime`` with the stack's checkpoint claim as applied
    (the pack's default config: minTerminationGracePeriodSeconds 60)."""
    claim = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml").inference_training.training.checkpoint.claim_name
    pvc = cluster.api.sanitize_for_serialization(cluster.core.read_namespaced_persistent_volume_claim(claim,
                                                                                                      TRAINING_NS))
    return check_checkpoint_safe_runtime([
        KubeObject("", runtime["metadata"]["name"], TRAINER[0], TRAINER[1], "TrainingRuntime", runtime),
        KubeObject("", claim, "", "v1", "PersistentVolumeClaim", pvc)])


def _trainer_pod(runtime: dict[str, Any], run: str) -> dict[str, Any]:
    """A bare Pod of ``runtime``'s trainer pod template on the real node, named ``run`` and labelled with it as its
    JobSet would be (the runtime turns that label into KUEUE_COHORTS_RUN_NAME: its checkpoints go to
    ``<root>/<run>``); training does not end by itself (KUEUE_COHORTS_DEMO_MAX_STEPS)."""
    (job,) = [j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == NODE]
    template = copy.deepcopy(job["template"]["spec"]["template"])
    spec = template["spec"]
    for container in spec["containers"]:
        container.pop("resources", None)
        if container["name"] == NODE:
            container.update(image=realnode.HOST_PYTHON_IMAGE, imagePullPolicy="Never")
            container["env"].append({"name": "KUEUE_COHORTS_DEMO_MAX_STEPS", "value": "1000000"})
    spec["nodeSelector"] = {realnode.NODE_LABEL[0]: realnode.NODE_LABEL[1]}
    spec["tolerations"] = [{"key": realnode.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    metadata = template.get("metadata", {})
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {
        "name": run, "namespace": TRAINING_NS, "annotations": metadata.get("annotations", {}),
        "labels": {**metadata.get("labels", {}), JOBSET_NAME_LABEL: run, HARM_LABEL: run}}}


def _delete_and_collect(cluster: Cluster, names: list[str], timeout: int) -> dict[str, tuple[int, float]]:
    """Delete the pods ``names`` (each with its own grace period, as the Job controller does) and return, per pod,
    the trainer container's exit code as the kubelet reported it and the seconds from the deletes to that report."""
    stream = watch.Watch()
    start = time.monotonic()
    for name in names:
        cluster.core.delete_namespaced_pod(name, TRAINING_NS)
    ends: dict[str, tuple[int, float]] = {}
    for event in stream.stream(cluster.core.list_namespaced_pod, TRAINING_NS, label_selector=HARM_LABEL,
                               timeout_seconds=timeout):
        pod = event["object"]
        statuses = pod.status.container_statuses or []
        if pod.metadata.name in names and pod.metadata.name not in ends and statuses and \
                statuses[0].state.terminated is not None:
            ends[pod.metadata.name] = (statuses[0].state.terminated.exit_code, time.monotonic() - start)
        if len(ends) == len(names):
            stream.stop()
    assert sorted(ends) == sorted(names), f"the kubelet reported only {sorted(ends)} of {names} terminated"
    return ends


@pytest.fixture
def harm_pods(cluster, real_node, dev_stack):
    """Delete this test's pods and the slow-save recipe's ConfigMap afterwards; wait until the pods are gone."""
    yield
    for delete in (lambda: cluster.core.delete_namespaced_config_map(SLOW_SAVE_CONFIGMAP, TRAINING_NS),
                   lambda: cluster.core.delete_collection_namespaced_pod(TRAINING_NS, label_selector=HARM_LABEL)):
        try:
            delete()
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    wait_for(lambda: not cluster.core.list_namespaced_pod(TRAINING_NS, label_selector=HARM_LABEL).items, 180,
             "the harm tests' pods to be gone")


@pytest.mark.timeout(REAL_NODE_TIMEOUT_S)
def test_a_prestop_hook_that_spends_the_grace_period_gets_the_trainer_killed_mid_save_and_steps_lost(
        cluster, harm_pods, request):
    """The runtime's rule item 2 (policy/rules/checkpoint_safe_runtime.py): killContainer (Kubernetes v1.36.3
    pkg/kubelet/kuberuntime/kuberuntime_container.go) runs the preStop hook first and takes the time it ran from
    the grace period, leaving the container at least minimumGracePeriodInSeconds (2 s, kuberuntime_manager.go)
    before the runtime's StopContainer SIGKILLs it. Two trainers whose saves take as long as the runtime declares
    (30 s) are deleted at once: the one of the runtime as applied saves and exits 75, 0 steps lost; the one whose
    runtime adds a preStop sleep of the grace period less PRESTOP_LEFT_S keeps training through the hook, gets
    SIGTERM with 5 s left, and is SIGKILLed in the middle of its stop save (exit 137): its run resumes from its last
    periodic checkpoint, here none (NO_PERIODIC_SAVE), so from step 0. Steps lost are the trainer's own measure: its
    progress marker against the newest complete checkpoint (trainer.metrics.steps_lost, as the entrypoint computes
    it when the next attempt starts)."""
    settings = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml").training_runtime
    grace, save_s = settings.grace_period_seconds, settings.checkpoint_save_seconds
    hook_s = grace - PRESTOP_LEFT_S
    host_dir = _checkpoint_dir(cluster, request)

    obeys = _applied_runtime(cluster)
    container = _trainer_container(obeys)
    for entry in container["env"]:
        if entry["name"] == "KUEUE_COHORTS_RECIPE":
            entry["value"] = "e2e_recipes.slow_save:build_trainer"
        if entry["name"] == "KUEUE_COHORTS_SAVE_STEPS":
            entry["value"] = str(NO_PERIODIC_SAVE)
    container["volumeMounts"].append({"name": "e2e-recipes", "mountPath": f"{TRAINER_PARENT}/e2e_recipes",
                                      "readOnly": True})
    (job,) = obeys["spec"]["template"]["spec"]["replicatedJobs"]
    job["template"]["spec"]["template"]["spec"]["volumes"].append(
        {"name": "e2e-recipes", "configMap": {"name": SLOW_SAVE_CONFIGMAP}})
    hooked = copy.deepcopy(obeys)
    _trainer_container(hooked)["lifecycle"] = {"preStop": {"sleep": {"seconds": hook_s}}}
    assert _judged(cluster, obeys) == []
    (finding,) = _judged(cluster, hooked)
    assert (finding.policy, finding.field) == ("checkpoint-safe-runtime", f"{POD_PATH}.containers[0].lifecycle.preStop")
    assert finding.fix == f"remove the preStop hook, or raise terminationGracePeriodSeconds by its {hook_s} s"

    cluster.core.create_namespaced_config_map(TRAINING_NS, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name=SLOW_SAVE_CONFIGMAP),
        data={"slow_save.py": f"SAVE_SECONDS = {save_s}\n{SLOW_SAVE}"}))
    runs = {"prestop-obeys": obeys, "prestop-harm": hooked}
    for run, runtime in runs.items():
        cluster.core.create_namespaced_pod(TRAINING_NS, _trainer_pod(runtime, run))
    for run in runs:
        wait_for(lambda run=run: read_progress(host_dir / run), 300, f"the trainer of {run} to train on the real node")
    ends = _delete_and_collect(cluster, list(runs), grace + 120)
    reached = {run: read_progress(host_dir / run) for run in runs}
    newest = {run: (c.step if (c := newest_complete(host_dir / run)) else None) for run in runs}
    lost = {run: steps_lost(reached[run], newest[run]) for run in runs}
    print(f"\npreStop sleep {hook_s} s of a {grace} s grace period, saves of {save_s} s: "
          + "; ".join(f"{run}: exit {ends[run][0]} {ends[run][1]:.1f} s after the delete, reached step "
                      f"{reached[run]}, newest complete checkpoint {newest[run]}, {lost[run]} steps lost"
                      for run in runs))
    assert ends["prestop-obeys"][0] == PREEMPTED_EXIT_CODE
    assert newest["prestop-obeys"] == reached["prestop-obeys"] and lost["prestop-obeys"] == 0
    assert ends["prestop-harm"][0] == 137  # SIGKILLed at the end of the grace period, in the middle of its save
    assert newest["prestop-harm"] is None and lost["prestop-harm"] == reached["prestop-harm"] > 0


@pytest.mark.timeout(REAL_NODE_TIMEOUT_S)
def test_a_read_only_checkpoint_mount_lets_the_trainer_keep_no_step(sandbox, cluster, harm_pods, request):
    """The runtime's rule item 1 (policy/rules/checkpoint_safe_runtime.py): the checkpoint claim mounted with
    ``readOnly: true``: the kubelet bind-mounts the volume read-only into the container (Kubernetes v1.36.3
    pkg/kubelet/kubelet_pods.go makeMounts, ``ReadOnly: mount.ReadOnly``, passed to the runtime as the CRI Mount's
    ``Readonly`` by pkg/kubelet/kuberuntime/kuberuntime_container.go makeMounts in generateContainerConfig). The
    runtime's trainer writes its progress marker (trainer/metrics.py PROGRESS_FILE) to the run's directory on that
    volume after every step, so with the runtime's defaults its first write is at step 1: it fails there with
    "Read-only file system" and exits 1 (not its preemption code 75: a failure the Job counts toward backoffLimit),
    having written no checkpoint and no marker. Every attempt starts again from global step 0: no step of the run is
    ever kept. The run's directory is there beforehand, as a first attempt on a writable mount would have left it."""
    host_dir = _checkpoint_dir(cluster, request)
    runtime = _applied_runtime(cluster)
    container = _trainer_container(runtime)
    root = next(e["value"] for e in container["env"] if e["name"] == CHECKPOINT_ROOT_ENV)
    (index,) = [i for i, m in enumerate(container["volumeMounts"]) if m["mountPath"] == root]
    container["volumeMounts"][index]["readOnly"] = True
    (finding,) = _judged(cluster, runtime)
    assert (finding.policy, finding.field) == ("checkpoint-safe-runtime",
                                               f"{POD_PATH}.containers[0].volumeMounts[{index}].readOnly")
    assert finding.fix == "drop readOnly from the checkpoint mount"

    run = "read-only-mount"
    (host_dir / run).mkdir()
    (host_dir / run).chmod(0o777)
    cluster.core.create_namespaced_pod(TRAINING_NS, _trainer_pod(runtime, run))

    def ended() -> k8s.V1Pod | None:
        pod = cluster.core.read_namespaced_pod(run, TRAINING_NS)
        statuses = pod.status.container_statuses or []
        return pod if statuses and statuses[0].state.terminated is not None else None

    pod = wait_for(ended, 300, f"the trainer of {run} to end on the real node")
    assert pod.spec.node_name == realnode.NODE_NAME
    log = _log_lines(sandbox, pod)
    print(f"\nread-only checkpoint mount: exit {pod.status.container_statuses[0].state.terminated.exit_code}; "
          + " / ".join(line for line in log if "global step" in line or "Read-only" in line))
    assert pod.status.container_statuses[0].state.terminated.exit_code == 1, "\n".join(log[-20:])
    assert any(line.endswith(f"no complete checkpoint in {root}/{run}: starting at global step 0") for line in log)
    assert any("Read-only file system" in line and PROGRESS_FILE in line for line in log), "\n".join(log[-20:])
    assert list_checkpoints(host_dir / run) == [] and read_progress(host_dir / run) is None
