"""``python -m kueue_cohorts.cohorts status`` and ``verify`` on the sandbox with the dev stack applied by ``pulumi up``.

status: during the guide's round trip (batch Jobs, as in test_02) the JSON view shows the training queue borrowing
the GPU slice the inference queue lends, then the preemption (reason InCohortReclamation, victim the training
Workload, preemptor the inference Workload), then training borrowing again once inference is gone.
verify: hand-edited quotas (JSON patches by another field manager, as ``kubectl edit`` makes them) make it exit 1
naming each field; ``pulumi up`` repairs them and verify exits 0 again.
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import KUEUE, REPO, SLICE, admitted_in, wait_for
from kubernetes import client as k8s_client
from kubernetes.client import ApiException

from kueue_cohorts.cohorts import cli
from kueue_cohorts.cohorts.verify.unqueued import FIX, RULE
from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.sandbox.paths import STATE_DIR_ENV
from kueue_cohorts.whatif.trace import Trace, TraceWorkload, WorkloadKind
from tests.helpers import stack_raw

GPU = "nvidia.com/gpualloc"


def _status() -> dict:
    """The JSON view of the dev stack (the CLI's main in this process: the sandbox fixture set the state dir)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["status", "--stack", "dev", "--output", "json"], out=out, err=err)
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def _queue(doc: dict, name: str) -> dict:
    [cohort] = [c for c in doc["cohorts"] if c["name"] == "c12-shared"]
    return next(q for q in cohort["clusterQueues"] if q["name"] == name)


def _gpu(doc: dict, queue: str) -> dict:
    return next(r for r in _queue(doc, queue)["resources"] if r["resource"] == GPU)


def _admitted(doc: dict, queue: str) -> list[str]:
    return [w["name"] for w in _queue(doc, queue)["workloads"]["admitted"]]


def _preemptions(doc: dict) -> list[dict]:
    return next(c for c in doc["cohorts"] if c["name"] == "c12-shared")["preemptions"]


def _cli(sandbox, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, STATE_DIR_ENV: str(sandbox.paths.root)}
    return subprocess.run([sys.executable, "-m", "kueue_cohorts.cohorts", *args], cwd=REPO, env=env,
                          capture_output=True,
                          text=True, timeout=300)


def test_status_json_follows_borrowing_preemption_and_borrowing_again(sandbox, cluster, clean_dev_jobs):
    training = cluster.submit_job("c12-training", "finetune-view", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    train_wl = wait_for(lambda: cluster.workload_of(training), 60, "the training Workload")["metadata"]["name"]

    doc = wait_for(lambda: (d := _status()) and train_wl in _admitted(d, "c12-training-cq")
                   and _gpu(d, "c12-training-cq")["borrowed"] == "1" and d, 90,
                   "the view to show the training Workload admitted while borrowing the GPU")
    assert _gpu(doc, "c12-training-cq") == {
        "flavor": "c12-default", "resource": GPU, "nominalQuota": "0", "borrowingLimit": "1", "lendingLimit": None,
        "usage": "1", "reserved": "1", "borrowed": "1", "lent": "0"}
    assert (_gpu(doc, "c12-inference-cq")["borrowingLimit"], _gpu(doc, "c12-inference-cq")["lent"]) == ("0", "1")
    assert doc["stack"] == "dev" and doc["cluster"].startswith("sandbox (")
    assert not any(p["victim"]["name"] == train_wl for p in _preemptions(doc))

    inference = cluster.submit_job("c12-inference", "serve-view", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
    serve_wl = wait_for(lambda: cluster.workload_of(inference), 60, "the inference Workload")["metadata"]["name"]

    def preempted(d: dict):
        return [p for p in _preemptions(d) if p["victim"]["name"] == train_wl]

    doc = wait_for(lambda: (d := _status()) and preempted(d) and serve_wl in _admitted(d, "c12-inference-cq") and d,
                   90, "the view to show the preemption and the inference Workload admitted")
    [p] = preempted(doc)
    assert p["reason"] == "InCohortReclamation"
    assert (p["victim"]["namespace"], p["victim"]["clusterQueue"]) == ("c12-training", "c12-training-cq")
    assert (p["preemptor"]["namespace"], p["preemptor"]["name"], p["preemptor"]["clusterQueue"]) == (
        "c12-inference", serve_wl, "c12-inference-cq")
    assert p["time"] and p["time"].endswith("Z")
    # Kueue writes each ClusterQueue's status (flavorsUsage) on its own, after the Workloads': wait for both queues
    doc = wait_for(lambda: (d := _status()) and _gpu(d, "c12-training-cq")["borrowed"] == "0"
                   and train_wl in [w["name"] for w in _queue(d, "c12-training-cq")["workloads"]["pending"]]
                   and _gpu(d, "c12-inference-cq")["usage"] == "1" and d,
                   60, "the training Workload to be pending and borrow nothing, inference to use its GPU")
    assert _gpu(doc, "c12-inference-cq")["usage"] == "1" and _gpu(doc, "c12-inference-cq")["borrowed"] == "0"

    cluster.delete_job(inference)
    doc = wait_for(lambda: (d := _status()) and train_wl in _admitted(d, "c12-training-cq")
                   and _gpu(d, "c12-training-cq")["borrowed"] == "1" and d, 120,
                   "the view to show training admitted and borrowing again")
    assert [q["reason"] for q in preempted(doc)] == ["InCohortReclamation"], "the preemption is still listed"

    table = _cli(sandbox, "status", "--stack", "dev")
    assert table.returncode == 0, table.stderr
    lines = [line.split() for line in table.stdout.splitlines()]
    assert ["cohort", "c12-shared"] in lines
    gpu_rows = [line for line in lines if GPU in line]
    assert ["c12-default", GPU, "0", "1", "-", "1", "1", "0"] in gpu_rows, table.stdout  # training: borrows 1
    assert any(line[:3] == ["c12-training-cq", "admitted", f"c12-training/{train_wl}"] for line in lines)
    assert any("InCohortReclamation" in line and f"c12-training/{train_wl}" in line
               and f"c12-inference/{serve_wl}" in line for line in lines), table.stdout


def test_status_watch_prints_one_json_document_per_refresh(sandbox, dev_stack):
    watch = _cli(sandbox, "status", "--stack", "dev", "--output", "json", "--watch", "--count", "3",
                 "--interval", "0.2")
    assert watch.returncode == 0, watch.stderr
    docs = [json.loads(line) for line in watch.stdout.splitlines()]
    assert len(docs) == 3
    assert all(d["kind"] == "kueue-cohorts/status/v1" for d in docs)
    assert all([c["name"] for c in d["cohorts"]] == ["c12-shared"] for d in docs)


def _patch(cluster, name: str, ops: list[dict]) -> None:
    cluster.custom.patch_cluster_custom_object(*KUEUE, "clusterqueues", name, ops, field_manager="kubectl-edit",
                                               _content_type="application/json-patch+json")


def _index(cluster, name: str, resource: str) -> int:
    resources = cluster.cluster_queue(name)["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return next(i for i, r in enumerate(resources) if r["name"] == resource)


def _differences(sandbox) -> list[tuple[str, str]]:
    result = _cli(sandbox, "verify", "--stack", "dev", "--output", "json")
    assert result.returncode == (0 if json.loads(result.stdout)["ok"] else 1), result.stderr
    return sorted((d["name"], d["path"]) for d in json.loads(result.stdout)["differences"])


def test_verify_names_every_hand_edited_quota_until_up_with_refresh_repairs_it(sandbox, cluster, project, dev_stack):
    """Quotas the stack sets and changed by hand are repaired by ``pulumi up --refresh`` (not by a plain ``up``,
    which diffs against its state and sees nothing); a limit the stack does not set, added by another field manager,
    survives both (server-side apply keeps another manager's fields): verify keeps naming it until it is removed."""
    ok = _cli(sandbox, "verify", "--stack", "dev")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "the cluster matches the stack" in ok.stdout

    cpu, gpu = _index(cluster, "c12-inference-cq", "cpu"), _index(cluster, "c12-inference-cq", GPU)
    tgpu = _index(cluster, "c12-training-cq", GPU)
    path = "/spec/resourceGroups/0/flavors/0/resources/{}/{}"
    # The stack's admission policy (issue 17, item 1) refuses a borrowing inference queue at the API server itself.
    with pytest.raises(ApiException) as denied:
        _patch(cluster, "c12-inference-cq", [{"op": "replace", "path": path.format(gpu, "borrowingLimit"),
                                             "value": "1"}])
    assert denied.value.status == 422 and "inference-borrowing-limit-zero" in denied.value.body
    _patch(cluster, "c12-inference-cq", [{"op": "replace", "path": path.format(cpu, "nominalQuota"), "value": "6"}])
    _patch(cluster, "c12-training-cq", [{"op": "add", "path": path.format(tgpu, "lendingLimit"), "value": "0"}])

    bad = _cli(sandbox, "verify", "--stack", "dev")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert bad.stdout.splitlines()[0].endswith(": 2 differences")
    field = "spec.resourceGroups[0].flavors[0].resources[{}].{}"
    assert (f'  - ClusterQueue c12-inference-cq: {field.format(cpu, "nominalQuota")} (cpu): differs: '
            'expected "4", live "6"') in bad.stdout.splitlines()
    added = ("c12-training-cq", field.format(tgpu, "lendingLimit"))
    assert (f"  - ClusterQueue c12-training-cq: {field.format(tgpu, 'lendingLimit')} ({GPU}): set on the cluster, "
            'not in the stack: expected absent, live "0"') in bad.stdout.splitlines()
    edited = sorted([("c12-inference-cq", field.format(cpu, "nominalQuota")), added])
    assert _differences(sandbox) == edited

    project.run(dev_stack, "up")
    assert _differences(sandbox) == edited, "a plain up diffs against its state: the drift stays"

    project.run(dev_stack, "up", refresh=True)
    assert _differences(sandbox) == [added], "up --refresh restores what the stack sets, not a field it never set"

    _patch(cluster, "c12-training-cq", [{"op": "remove", "path": path.format(tgpu, "lendingLimit")}])
    fixed = _cli(sandbox, "verify", "--stack", "dev")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


# --- issue 26 item 8: the promises on the live cluster ----------------------------------------------------------

ADMISSION = ("admissionregistration.k8s.io", "v1")
TENANT_RAIL = "kueue-cohorts.c12-shared.tenant-label"


def _hand_made_queue(name: str) -> dict:
    """The issue's queue: none of our labels, its own GPU nominalQuota, in the inference cohort."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c12-shared", "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                         {"name": "c12-default", "resources": [{"name": GPU, "nominalQuota": "1"}]}]}]}}


def _delete(cluster, plural: str, name: str) -> None:
    try:
        cluster.custom.delete_cluster_custom_object(*KUEUE, plural, name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _set_actions(cluster, actions: list[str]) -> None:
    cluster.custom.patch_cluster_custom_object(*ADMISSION, "validatingadmissionpolicybindings", TENANT_RAIL,
                                               {"spec": {"validationActions": actions}})


def test_verify_names_what_got_in_by_another_path_and_a_weakened_guardrail(sandbox, cluster, dev_stack):
    """Made by hand by the admin (a stack identity, so no guardrail refuses them): a ClusterQueue with its own GPU
    nominalQuota in the inference cohort and a WorkloadPriorityClass of 1,000,000; and the tenant-label binding
    turned to Warn. Before this, verify said the cluster matches the stack."""
    ok = _cli(sandbox, "verify", "--stack", "dev")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", _hand_made_queue("e2e-hand-made-cq"))
    cluster.custom.create_cluster_custom_object(*KUEUE, "workloadpriorityclasses", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "e2e-vip"},
        "value": 1_000_000})
    _set_actions(cluster, ["Warn"])
    try:
        result = _cli(sandbox, "verify", "--stack", "dev", "--output", "json")
        assert result.returncode == 1, result.stdout + result.stderr
        diffs = json.loads(result.stdout)["differences"]
        by = {(d["kind"], d["name"], d["path"]): d for d in diffs}
        queue = by[("ClusterQueue", "e2e-hand-made-cq", "spec.cohortName")]
        assert queue["rule"].startswith("cohort-membership: ") and queue["live"] == "c12-shared" and queue["fix"]
        vip = by[("WorkloadPriorityClass", "e2e-vip", "value")]
        assert vip["rule"].startswith("priority-ceiling: ") and vip["live"] == 1_000_000
        # the rule book on the live objects: one GPU on the node, two in the tree
        assert any(d["rule"].startswith("cohort-nominal-within-capacity") for d in diffs), diffs
        weakened = by[("ValidatingAdmissionPolicyBinding", TENANT_RAIL, "spec.validationActions")]
        assert "the guardrail is weakened" in weakened["rule"] and weakened["live"] == ["Warn"]
        table = _cli(sandbox, "verify", "--stack", "dev")
        assert any(line.startswith("  - ClusterQueue e2e-hand-made-cq at spec.cohortName: cohort-membership")
                   for line in table.stdout.splitlines()), table.stdout
    finally:
        _delete(cluster, "clusterqueues", "e2e-hand-made-cq")
        _delete(cluster, "workloadpriorityclasses", "e2e-vip")
        _set_actions(cluster, ["Deny"])
    wait_for(lambda: _cli(sandbox, "verify", "--stack", "dev").returncode == 0, 60, "verify to pass again")


def test_verify_watch_reports_a_hand_made_queue_as_it_appears(sandbox, cluster, dev_stack):
    env = {**os.environ, STATE_DIR_ENV: str(sandbox.paths.root)}
    watch = subprocess.Popen([sys.executable, "-m", "kueue_cohorts.cohorts", "verify", "--stack", "dev", "--watch",
                              "--count",
                              "4", "--interval", "1"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        first = watch.stdout.readline()
        assert first.endswith("the cluster matches the stack and keeps its promises\n"), first
        cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", _hand_made_queue("e2e-watch-cq"))
        rest, err = watch.communicate(timeout=300)
    finally:
        if watch.poll() is None:
            watch.kill()
        _delete(cluster, "clusterqueues", "e2e-watch-cq")
    assert watch.returncode == 1, err
    assert any(" + ClusterQueue e2e-watch-cq at spec.cohortName: cohort-membership" in line
               for line in rest.splitlines()), rest


HARM_NS = "e2e-hand-made"


def _harm_queue() -> dict:
    """A queue like the issue's, covering the slice a Job requests, selecting only its own namespace."""
    queue = _hand_made_queue("e2e-harm-cq")
    queue["spec"]["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": HARM_NS}}
    queue["spec"]["resourceGroups"] = [{"coveredResources": sorted(SLICE), "flavors": [
        {"name": "c12-default", "resources": [{"name": r, "nominalQuota": SLICE[r]} for r in sorted(SLICE)]}]}]
    return queue


def _judged(condition: dict) -> dict | None:
    """A PodScheduled condition the scheduler wrote (False, not the stale SchedulingGated of a pod just ungated)."""
    return condition if condition["status"] == "False" and condition.get("reason") != "SchedulingGated" else None


def _pod_scheduled(cluster, namespace: str, job_name: str) -> dict | None:
    pods = cluster.core.list_namespaced_pod(namespace, label_selector=f"batch.kubernetes.io/job-name={job_name}")
    for pod in pods.items:
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled":
                return {"status": cond.status, "reason": cond.reason}
    return None


def test_without_the_guardrail_a_hand_made_queue_takes_inferences_gpu(sandbox, cluster, clean_dev_jobs):
    """The harm of issue 26 item 7, made by the admin (a stack identity: no guardrail refuses it): a queue with its
    own GPU nominalQuota in the inference cohort admits its Job, which takes the node's only GPU; Kueue then admits
    inference against quota no node has, and inference's pod is never scheduled (nothing to reclaim: the hand-made
    queue borrows nothing). ``cohorts verify`` names the queue and the broken capacity promise."""
    cluster.ensure_namespace(HARM_NS)
    cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", _harm_queue())
    cluster.custom.create_namespaced_custom_object(*KUEUE, HARM_NS, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "e2e-harm-lq", "namespace": HARM_NS}, "spec": {"clusterQueue": "e2e-harm-cq"}})
    grab = None
    try:
        grab = cluster.submit_job(HARM_NS, "grab", "e2e-harm-lq", SLICE)
        wait_for(lambda: admitted_in(cluster.workload_of(grab)) == "e2e-harm-cq", 90, "the hand-made Job admitted")
        wait_for(lambda: (_pod_scheduled(cluster, HARM_NS, "grab") or {}).get("status") == "True", 90,
                 "the hand-made Job's pod on the GPU node")
        serve = cluster.submit_job("c12-inference", "serve-harm", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
        wait_for(lambda: admitted_in(cluster.workload_of(serve)) == "c12-inference-cq", 90,
                 "Kueue to admit inference against its nominalQuota")
        unschedulable = wait_for(lambda: (s := _pod_scheduled(cluster, "c12-inference", "serve-harm"))
                                 and _judged(s), 90, "the scheduler to judge inference's pod")
        assert unschedulable["reason"] == "Unschedulable"
        result = _cli(sandbox, "verify", "--stack", "dev", "--output", "json")
        assert result.returncode == 1, result.stdout + result.stderr
        diffs = json.loads(result.stdout)["differences"]
        assert any(d["name"] == "e2e-harm-cq" and d["rule"].startswith("cohort-membership") for d in diffs), diffs
        assert any(d["rule"].startswith("cohort-nominal-within-capacity") for d in diffs), diffs
    finally:
        if grab is not None:
            cluster.delete_job(grab)
        wait_for(lambda: not cluster.kueue_objects("workloads", HARM_NS), 60, "the hand-made Workload gone")
        cluster.custom.delete_namespaced_custom_object(*KUEUE, HARM_NS, "localqueues", "e2e-harm-lq")
        _delete(cluster, "clusterqueues", "e2e-harm-cq")


FENCE = {"key": "kueue-cohorts/gpu", "value": "true", "effect": "NoSchedule"}


def _unqueued_job(cluster, name: str):
    """A Job in the training namespace without the queue-name label (the dev stack's manageJobsWithoutQueueName is
    false: Kueue leaves it alone), asking for the node's GPU slice."""
    container = k8s_client.V1Container(
        name="main", image="registry.invalid/e2e:never-pulled", command=["sleep", "infinity"],
        resources=k8s_client.V1ResourceRequirements(requests=dict(SLICE), limits=dict(SLICE)))
    job = k8s_client.V1Job(metadata=k8s_client.V1ObjectMeta(name=name, namespace="c12-training"),
                           spec=k8s_client.V1JobSpec(backoff_limit=0, template=k8s_client.V1PodTemplateSpec(
                               spec=k8s_client.V1PodSpec(containers=[container], restart_policy="Never",
                                                         termination_grace_period_seconds=0))))
    return cluster.batch.create_namespaced_job("c12-training", job)


def _unqueued_findings(sandbox) -> list[dict]:
    result = _cli(sandbox, "verify", "--stack", "dev", "--output", "json")
    diffs = json.loads(result.stdout)["differences"] if result.stdout else []
    return [d for d in diffs if d["kind"] == "Pod" and d["rule"] == RULE]


def test_an_unqueued_job_takes_inferences_gpu_until_the_gpu_nodes_are_fenced(sandbox, cluster, clean_dev_jobs):
    """Issue 37 class 3 on the dev stack as shipped: a Job without the queue-name label in the training namespace
    runs outside Kueue on the node's only GPU; inference is admitted and its pod is never scheduled ("Insufficient
    nvidia.com/gpualloc"). ``cohorts verify`` names that pod, and the settings check warns at nodePools[0].taints.
    Fenced as the warning says (the node tainted, the ResourceFlavor tolerating it), the same unlabelled Job stays
    Pending and inference's pod runs (Kueue added the flavor's toleration to it)."""
    (warning,) = [w for w in validate(stack_raw("dev")).warnings if w.key == "kueue-cohorts:nodePools[0].taints"]
    assert "a Job or Pod without the queue-name label in a tenant namespace" in warning.rule

    grab = _unqueued_job(cluster, "grab-unqueued")
    wait_for(lambda: (_pod_scheduled(cluster, "c12-training", "grab-unqueued") or {}).get("status") == "True", 90,
             "the unlabelled Job's pod on the GPU node")
    assert cluster.workload_of(grab) is None  # Kueue never saw it
    serve = cluster.submit_job("c12-inference", "serve-unqueued", "c12-inference-lq", SLICE,
                               priority_class="c12-inference-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(serve)) == "c12-inference-cq", 90,
             "Kueue to admit inference within its nominalQuota")
    pending = wait_for(lambda: (s := _pod_scheduled(cluster, "c12-inference", "serve-unqueued"))
                       and _judged(s), 90, "the scheduler to judge inference's pod")
    assert pending["reason"] == "Unschedulable"
    (finding,) = wait_for(lambda: _unqueued_findings(sandbox), 60, "verify to name the unlabelled Job's pod")
    assert finding["namespace"] == "c12-training" and finding["name"].startswith("grab-unqueued-")
    assert finding["live"] == {"node": "gpu-0", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                               "nvidia.com/gpumem": "2048"}
    assert finding["fix"] == FIX
    for job in (grab, serve):
        cluster.delete_job(job)

    node = cluster.core.read_node("gpu-0")
    flavor = cluster.custom.get_cluster_custom_object(*KUEUE, "resourceflavors", "c12-default")
    try:
        cluster.core.patch_node("gpu-0", {"spec": {"taints": [*(node.spec.taints or []), FENCE]}})
        cluster.custom.patch_cluster_custom_object(*KUEUE, "resourceflavors", "c12-default", {"spec": {
            "tolerations": [*(flavor["spec"].get("tolerations") or []), {**FENCE, "operator": "Equal"}]}})
        grab = _unqueued_job(cluster, "grab-fenced")
        serve = cluster.submit_job("c12-inference", "serve-fenced", "c12-inference-lq", SLICE,
                                   priority_class="c12-inference-prio")
        wait_for(lambda: (_pod_scheduled(cluster, "c12-inference", "serve-fenced") or {}).get("status") == "True",
                 90, "inference's pod scheduled on the fenced node")
        blocked = wait_for(lambda: (s := _pod_scheduled(cluster, "c12-training", "grab-fenced"))
                           and _judged(s), 90, "the scheduler to keep the unlabelled pod off")
        assert blocked["reason"] == "Unschedulable"
        assert _unqueued_findings(sandbox) == []
    finally:
        cluster.core.patch_node("gpu-0", {"spec": {"taints": node.spec.taints}})
        cluster.custom.patch_cluster_custom_object(*KUEUE, "resourceflavors", "c12-default", {"spec": {
            "tolerations": flavor["spec"].get("tolerations")}})


def test_whatif_from_the_cluster_starts_with_the_running_training_and_reclaims_it(sandbox, cluster, clean_dev_jobs,
                                                                                  tmp_path):
    """Issue 41 item 1: `kueue-cohorts whatif --from-cluster` begins with what the live cluster runs now (a training
    Job borrowing the GPU, admitted by the real Kueue) and replays the trace from there: the trace's inference
    replica, submitted 5 s from now, reclaims the live training workload in the simulation; without --from-cluster
    the same trace has nothing to reclaim."""
    training = cluster.submit_job("c12-training", "finetune-live", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(training)) == "c12-training-cq", 90, "training admitted")
    replica = TraceWorkload(name="serve-0", submit_seconds=5, namespace="c12-inference",
                            local_queue="c12-inference-lq", kind=WorkloadKind.INFERENCE, requests=dict(SLICE),
                            duration_seconds=60, priority_class="c12-inference-prio")
    trace = tmp_path / "demand.jsonl"
    Trace.build([replica], 600.0).write(trace)
    command = [str(Path(sys.executable).parent / "kueue-cohorts"), "whatif", "--stack", "dev", "--trace", str(trace),
               "--output", "json"]
    env = {**os.environ, STATE_DIR_ENV: str(sandbox.paths.root)}

    def head(args: list[str]) -> dict:
        proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1) and proc.stdout.startswith("{"), proc.stdout + proc.stderr
        doc = json.loads(proc.stdout)
        return {q["key"]: q["head"] for q in doc["queues"]} | {"workloads": doc["trace"]["workloads"],
                                                                 "source": doc["trace"]["source"]}

    live = head([*command, "--from-cluster"])
    assert live["workloads"] == 2 and live["source"] == f"the live cluster now + {trace}"
    assert live["c12-training-cq"]["workloads"] == 1 and live["c12-training-cq"]["preempted"] == 1
    assert live["c12-inference-cq"]["never_admitted"] == 0
    offline = head(command)
    assert offline["workloads"] == 1
    assert (offline.get("c12-training-cq") or {}).get("preempted", 0) == 0
    cluster.delete_job(training)
