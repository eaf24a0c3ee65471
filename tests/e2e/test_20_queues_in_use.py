"""Issue 28 finding 10 on the sandbox: a ClusterQueue that a running Job holds is never deleted blindly, and no
command waits on it without bound.

The dev stack with names of its own (`held-*`, namespacePolicy Label on namespaces the test makes, so that only the
Job's own deletion can release the queue), through `python -m kueue_cohorts.deploy` as a user runs it. A Job is
admitted in the
training ClusterQueue; then
- an `up` that renames that ClusterQueue is refused after its preview and before any change, naming the Job's
  Workload (namespace/name, with its Job) and the ways out: the queue is still there and not Terminating, the renamed
  one was not created;
- `destroy` is refused the same way, and deletes nothing;
- the first way out works: stopping the queue (stopPolicy HoldAndDrain) makes Kueue evict the Workload; the renaming
  `up` then succeeds and the Job is admitted in the renamed queue;
- the engine's own destroy (no check before it, as when a workload is admitted after the check) gives up on the
  renamed queue after the bounded wait (RELEASE_WAIT_S), leaving it Terminating, and deploy's explanation of that
  failure names the Workload and puts deleting it first (the run deleted the LocalQueue, through which Kueue would
  reach the workloads of a stopped queue); deleting the Job releases the queue, and `destroy` finishes.
"""
from __future__ import annotations

import argparse

import pytest
import yaml
from e2e_support import KUEUE, REPO, TRAINER, admitted_in, is_true, wait_for
from kubernetes import client as k8s
from pulumi import automation as auto

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.kueue import RELEASE_WAIT_S
from kueue_cohorts.components.model.runtime import render_trainjob
from kueue_cohorts.deploy import engine, queue_holders, stackfile
from kueue_cohorts.deploy.cli import UP_STARTS, explain_release_timeout
from tests.deploycli import bare_env, clone, deploy, edit_stack

STACK = "held"
INFERENCE, TRAINING = "held-inference", "held-training"
TRAINING_CQ, RENAMED_CQ = "held-training-cq", "held-train-cq"
CPU = {"cpu": "1", "memory": "1Gi"}


def _stack() -> dict:
    """The dev stack renamed (cohort, queues, classes, flavor, namespaces), without services, training runtime and
    checkpoint volume, its namespaces labelled (namespacePolicy Label), not created."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    config = doc["config"]
    it = config["kueue-cohorts:inferenceTraining"]
    it.update(cohort="held-shared", namespacePolicy="Label")
    for side, namespace in (("inference", INFERENCE), ("training", TRAINING)):
        queue = it[side]
        queue.update(clusterQueue=f"held-{side}-cq", localQueue=f"held-{side}-lq", namespaces=[namespace])
        queue["priorityClass"]["name"] = f"held-{side}-prio"
        queue.pop("services", None)
    it["training"].pop("checkpoint", None)
    config.pop("kueue-cohorts:trainingRuntime", None)
    config["kueue-cohorts:resourceFlavor"] = {"name": "held-flavor"}
    return {"config": config}


def _rename(root) -> None:
    it = _stack()["config"]["kueue-cohorts:inferenceTraining"]
    it["training"]["clusterQueue"] = RENAMED_CQ
    edit_stack(root, STACK, {"inferenceTraining": it})


@pytest.fixture
def project(sandbox, cluster, tmp_path):
    for name in (INFERENCE, TRAINING):
        cluster.ensure_namespace(name)
    root = clone(tmp_path / "kueue-cohorts")
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(_stack(), sort_keys=False))
    yield root
    for job in cluster.batch.list_namespaced_job(TRAINING).items:
        cluster.delete_job(job)
    for name in (TRAINING_CQ, RENAMED_CQ):  # a queue a failed step left held: let Kueue release it
        try:
            cluster.custom.patch_cluster_custom_object(*KUEUE, "clusterqueues", name,
                                                       {"spec": {"stopPolicy": "HoldAndDrain"}})
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    deploy(root, "destroy", "--stack", STACK, env=bare_env(tmp_path))
    for name in (INFERENCE, TRAINING):
        cluster.core.delete_namespace(name)


def _run(root, env, command: str, code: int = 0):
    proc = deploy(root, command, "--stack", STACK, *(["--no-policy"] if command in ("up", "preview") else []), env=env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


def _queue(cluster, name: str) -> dict | None:
    try:
        return cluster.cluster_queue(name)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _held_lines(stderr: str, command: str, workload: str, job: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    start = [i for i, line in enumerate(lines) if line.startswith(f"deploy: {command} --stack {STACK} would wait ")]
    assert start, stderr
    lines = lines[start[0]:]
    assert lines[0].startswith(f"deploy: {command} --stack {STACK} would wait for Kueue to release 1 object(s)"), stderr
    assert queue_holders.RESOURCE_IN_USE in lines[0]
    assert lines[1].startswith(f"  ClusterQueue {TRAINING_CQ} ("), stderr
    assert f"admitted workloads {TRAINING}/{workload} (Job {job})" in lines[1], stderr
    assert "stopPolicy" in lines[-1] and "HoldAndDrain" in lines[-1] and f"run {command} again" in lines[-1]
    return lines


def test_a_queue_a_running_job_holds_is_never_deleted_blindly(project, cluster, tmp_path):
    env = bare_env(tmp_path)
    _run(project, env, "up")
    job = cluster.submit_job(TRAINING, "train", "held-training-lq", CPU, priority_class="held-training-prio")
    workload = wait_for(lambda: (w := cluster.workload_of(job)) and admitted_in(w) == TRAINING_CQ and w, 120,
                        "the Job to be admitted in the training ClusterQueue")
    name = workload["metadata"]["name"]

    # A renaming up: refused after its preview, before any change.
    _rename(project)
    refused = _run(project, env, "up", code=1)
    lines = _held_lines(refused.stderr, "up", name, "train")
    assert "(removed or renamed)" in lines[1] and lines[-1].startswith("deploy: nothing was changed. Fix: ")
    assert UP_STARTS not in refused.stdout
    assert "deletionTimestamp" not in _queue(cluster, TRAINING_CQ)["metadata"]
    assert _queue(cluster, RENAMED_CQ) is None

    # destroy: refused, nothing deleted.
    refused = _run(project, env, "destroy", code=1)
    lines = _held_lines(refused.stderr, "destroy", name, "train")
    assert "(deleted)" in lines[1] and lines[-1].startswith("deploy: nothing was destroyed. Fix: ")
    assert "deletionTimestamp" not in _queue(cluster, TRAINING_CQ)["metadata"]
    assert cluster.kueue_objects("localqueues", TRAINING)

    # The way out: stop the queue; Kueue evicts the Workload (its quota released), and the rename goes through.
    cluster.custom.patch_cluster_custom_object(*KUEUE, "clusterqueues", TRAINING_CQ,
                                               {"spec": {"stopPolicy": "HoldAndDrain"}})
    wait_for(lambda: not is_true(cluster.workload_of(job), "QuotaReserved"), 120,
             "Kueue to evict the Workload of the stopped ClusterQueue")
    _run(project, env, "up")
    assert _queue(cluster, TRAINING_CQ) is None
    workload = wait_for(lambda: (w := cluster.workload_of(job)) and admitted_in(w) == RENAMED_CQ and w, 120,
                        "the evicted Job to be admitted in the renamed ClusterQueue")
    name = workload["metadata"]["name"]

    # The engine's own destroy, without the check: the delete of the held queue ends after the bounded wait.
    stack = engine.open_stack(STACK, work_dir=project, backend=env["PULUMI_BACKEND_URL"])
    events: list[auto.EngineEvent] = []
    with pytest.raises(auto.CommandError):
        stack.destroy(on_event=events.append, **engine.run_kwargs(stack, policy=False, operation="destroy"))
    assert queue_holders.unreleased(events) == [queue_holders.Deletion("ClusterQueue", RENAMED_CQ)]
    left = _queue(cluster, RENAMED_CQ)
    assert left is not None and left["metadata"].get("deletionTimestamp")
    assert queue_holders.RESOURCE_IN_USE in left["metadata"]["finalizers"]
    target = stackfile.read(STACK, project / "stacks" / f"Pulumi.{STACK}.yaml")
    explained = explain_release_timeout(argparse.Namespace(command="destroy", stack=STACK), target, env, events)
    assert explained[0].startswith(f"deploy: destroy waited up to {RELEASE_WAIT_S} s for Kueue to release "
                                   f"ClusterQueue {RENAMED_CQ}"), explained
    assert explained[1] == f"  ClusterQueue {RENAMED_CQ} (deleted): admitted workloads {TRAINING}/{name} (Job train)"
    assert explained[-1].startswith("deploy: Fix: delete or finish those workloads"), explained

    # Deleting the Job releases the Terminating queue; destroy finishes the rest.
    cluster.delete_job(job)
    wait_for(lambda: _queue(cluster, RENAMED_CQ) is None, 120, "Kueue to release the queue once its Job is gone")
    _run(project, env, "destroy")
    assert _queue(cluster, RENAMED_CQ) is None and _queue(cluster, TRAINING_CQ) is None
    assert not cluster.kueue_objects("localqueues", TRAINING)


# --- issue 39: a TrainingRuntime the Trainer keeps while a suspended TrainJob names it ------------------------------

RT_STACK = "heldrt"
RT_INFERENCE, RT_TRAINING = "heldrt-inference", "heldrt-training"


def _runtime_stack() -> dict:
    """The dev stack renamed `heldrt-*` with its training runtime and checkpoint volume, its namespaces labelled
    (namespacePolicy Label, made by the test)."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    config = doc["config"]
    it = config["kueue-cohorts:inferenceTraining"]
    it.update(cohort="heldrt-shared", namespacePolicy="Label")
    for side, namespace in (("inference", RT_INFERENCE), ("training", RT_TRAINING)):
        queue = it[side]
        queue.update(clusterQueue=f"heldrt-{side}-cq", localQueue=f"heldrt-{side}-lq", namespaces=[namespace])
        queue["priorityClass"]["name"] = f"heldrt-{side}-prio"
        queue.pop("services", None)
    it["training"]["checkpoint"] = {"claimName": "heldrt-ckpt", "size": "1Gi", "retainOnDelete": False}
    config["kueue-cohorts:resourceFlavor"] = {"name": "heldrt-flavor"}
    return {"config": config}


@pytest.fixture
def runtime_project(sandbox, cluster, tmp_path):
    for name in (RT_INFERENCE, RT_TRAINING):
        cluster.ensure_namespace(name)
    root = clone(tmp_path / "kueue-cohorts")
    (root / "stacks" / f"Pulumi.{RT_STACK}.yaml").write_text(yaml.safe_dump(_runtime_stack(), sort_keys=False))
    yield root
    for job in cluster.custom.list_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainjobs")["items"]:
        cluster.custom.delete_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainjobs", job["metadata"]["name"])
    deploy(root, "destroy", "--stack", RT_STACK, env=bare_env(tmp_path))
    for name in (RT_INFERENCE, RT_TRAINING):
        cluster.core.delete_namespace(name)


def test_destroy_after_hold_and_drain_names_the_trainjob_that_holds_the_runtime(runtime_project, cluster, tmp_path):
    """The reproduction of issue 39: the TrainJob is admitted, its ClusterQueue stopped (HoldAndDrain) so Kueue
    evicts it; the queue is free, but the suspended TrainJob still names the TrainingRuntime, which the Trainer keeps
    behind trainer.kubeflow.org/resource-in-use. `destroy` (which sat 10 minutes there) now refuses at once, naming
    the TrainJob and the fix, and deletes nothing; with the TrainJob deleted it goes through."""
    env = bare_env(tmp_path)
    proc = deploy(runtime_project, "up", "--stack", RT_STACK, "--no-policy", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runtime = load_stack_file(runtime_project / "stacks" / f"Pulumi.{RT_STACK}.yaml").training_runtime.name
    manifest = render_trainjob("held-tj", RT_TRAINING, runtime, "heldrt-training-lq", "heldrt-training-prio")
    cluster.custom.create_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainjobs", manifest)
    wait_for(lambda: [w for w in cluster.kueue_objects("workloads", RT_TRAINING)
                      if admitted_in(w) == "heldrt-training-cq"], 120, "the TrainJob's Workload to be admitted")
    cluster.custom.patch_cluster_custom_object(*KUEUE, "clusterqueues", "heldrt-training-cq",
                                               {"spec": {"stopPolicy": "HoldAndDrain"}})
    wait_for(lambda: not any(is_true(w, "QuotaReserved") for w in cluster.kueue_objects("workloads", RT_TRAINING)),
             120, "Kueue to evict the TrainJob's Workload")
    trainjob = cluster.custom.get_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainjobs", "held-tj")
    assert trainjob["spec"].get("suspend") is True
    # The Trainer's runtime controller puts its finalizer on at its next reconcile of the runtime (v2.2.1 reconciles
    # on the runtime's own events): any update does it, as an `up` that touches the runtime did in the issue.
    cluster.custom.patch_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainingruntimes", runtime,
                                                  {"metadata": {"annotations": {"e2e/touched": "1"}}})
    wait_for(lambda: queue_holders.TRAINER_RESOURCE_IN_USE in cluster.custom.get_namespaced_custom_object(
        *TRAINER, RT_TRAINING, "trainingruntimes", runtime)["metadata"].get("finalizers", []), 60,
        "the Trainer to hold the runtime that a TrainJob names")

    refused = deploy(runtime_project, "destroy", "--stack", RT_STACK, env=env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert lines[0].startswith(f"deploy: destroy --stack {RT_STACK} would wait for the Trainer to release 1 "
                               "object(s)"), refused.stderr
    assert lines[1] == (f"  TrainingRuntime {RT_TRAINING}/{runtime} (deleted): named by {RT_TRAINING}/held-tj "
                        "(TrainJob, suspended)"), refused.stderr
    assert lines[-1].startswith("deploy: nothing was destroyed. Fix: delete the TrainJobs that name each "
                                f"TrainingRuntime (kubectl delete trainjob -n {RT_TRAINING} NAME;"), refused.stderr
    assert cluster.kueue_objects("localqueues", RT_TRAINING)  # nothing was deleted

    cluster.custom.delete_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainjobs", "held-tj")
    wait_for(lambda: not cluster.custom.list_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainjobs")["items"],
             60, "the TrainJob to be gone")
    done = deploy(runtime_project, "destroy", "--stack", RT_STACK, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not cluster.custom.list_namespaced_custom_object(*TRAINER, RT_TRAINING, "trainingruntimes")["items"]
