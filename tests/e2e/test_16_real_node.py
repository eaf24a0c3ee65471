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

The real node is started by this module only (its binaries are built on first use: toolchain group real-node), and
stopped again at its end, so the other e2e tests see the sandbox without it.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from e2e_support import PRIORITY_LABEL, QUEUE_LABEL, REPO, SLICE, Cluster, start_sandbox, wait_for
from kubernetes import client as k8s
from kubernetes import watch

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.runtime import PREEMPTED_EXIT_CODE, render_trainjob
from kueue_cohorts.sandbox import realnode
from kueue_cohorts.sandbox.cluster import Sandbox

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

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
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


@pytest.fixture
def clean_real_trainjob(cluster, dev_stack):
    """Delete the test's TrainJob and inference Deployment afterwards; wait until their Pods are gone."""
    yield
    apps = k8s.AppsV1Api(cluster.api)
    for delete in (lambda: cluster.custom.delete_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", JOB_NAME),
                   lambda: apps.delete_namespaced_deployment("serve-rn", INFERENCE_NS)):
        try:
            delete()
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    for ns in (TRAINING_NS, INFERENCE_NS):
        wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), 180, f"Workloads in {ns} to be gone")
    wait_for(lambda: not cluster.core.list_namespaced_pod(TRAINING_NS,
                                                          label_selector=f"{JOBSET_NAME_LABEL}={JOB_NAME}").items,
             180, "the TrainJob's Pods to be gone")


@pytest.mark.timeout(REAL_NODE_TIMEOUT_S)
def test_the_real_trainer_is_reclaimed_saves_on_sigterm_and_resumes_with_no_step_lost(
        sandbox, cluster, real_node, dev_stack, clean_real_trainjob, request):
    settings = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
    runtime = settings.training_runtime
    claim = settings.inference_training.training.checkpoint.claim_name
    pvc = wait_for(lambda: (c := cluster.core.read_namespaced_persistent_volume_claim(claim, TRAINING_NS))
                   .status.phase == "Bound" and c, 60, f"the checkpoint claim {claim} to be bound")
    volume = cluster.core.read_persistent_volume(pvc.spec.volume_name)
    # kwok's provisioner makes a hostPath PV (its volume stage): on one real node it stands in for the RWX volume.
    # The kubelet creates a missing hostPath directory as root 0755; the trainer runs as 65534 (the runtime's
    # runAsUser), and fsGroup does not apply to hostPath, so the directory is made writable first.
    host_dir = Path(volume.spec.host_path.path)
    host_dir.mkdir(parents=True, exist_ok=True)
    host_dir.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(host_dir, ignore_errors=True))

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

    def terminated() -> k8s.V1ContainerStateTerminated | None:
        try:
            pod = cluster.core.read_namespaced_pod(first.metadata.name, TRAINING_NS)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        statuses = pod.status.container_statuses or []
        return statuses[0].state.terminated if statuses and statuses[0].state.terminated else None

    stopped = wait_for(terminated, runtime.grace_period_seconds + 120, "the trainer to stop", interval=0.1)
    stopped_s = time.monotonic() - start

    def inference_running() -> bool:
        pods = cluster.core.list_namespaced_pod(INFERENCE_NS, label_selector="app=serve-rn").items
        return any(p.status.phase == "Running" for p in pods)

    wait_for(inference_running, runtime.grace_period_seconds + 120, "the inference pod to run")
    inference_s = time.monotonic() - start
    first_log = _log_lines(sandbox, first)
    print(f"\nreal trainer: stopped {stopped_s:.1f} s and the inference pod Running {inference_s:.1f} s after the "
          f"inference Deployment was created (grace period {runtime.grace_period_seconds} s)")
    assert stopped.exit_code == PREEMPTED_EXIT_CODE, "\n".join(first_log[-20:])
    stop_line = next(line for line in first_log if "preempted: stopped at global step" in line)
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
