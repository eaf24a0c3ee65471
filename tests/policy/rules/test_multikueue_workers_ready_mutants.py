"""multikueue-workers-ready (promise 2): what the policy-multikueue-workers-ready mutation run found no test pinning
down, on a small hand-written manager and worker (no stack rendering): whole findings of each kind, the policy's
options (serviceAccounts, integrations, featureGates), namespaces made by a NamespacePatch, and which objects count.

Upstream: Kueue v0.19.2 MultiKueue (pkg/controller/admissionchecks/multikueue: the workload and its job are created on
the worker in the same namespace, through the LocalQueue of the same name; every job kind's adapter watches it
cluster-wide), Kubernetes v1.36 RBAC (`plugin/pkg/auth/authorizer/rbac`: ClusterRoleBinding rules everywhere,
RoleBinding rules in their namespace)."""
from __future__ import annotations

from typing import Any

from kueue_cohorts.policy.rules.multikueue_workers_ready import MULTIKUEUE_WORKERS_READY, check_workers_ready
from kueue_cohorts.policy.rules.vocabulary.multikueue import MANAGER
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import kube, urn

POLICY = "multikueue-workers-ready"
QUEUE = ObjectRef("ClusterQueue", None, "c12-training-cq")
RBAC = "rbac.authorization.k8s.io/v1"
JOBS_ONLY = {"integrations": ["batch/job"]}
LEAST = "never cluster-wide: writes in every namespace make the worker credential an administrator of the worker"


def _m(api: str, kind: str, name: str, namespace: str | None = None, **rest: Any) -> dict:
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, **({"namespace": namespace} if namespace else {})}, **rest}


CQ = _m("kueue.x-k8s.io/v1beta2", "ClusterQueue", "c12-training-cq",
        spec={"admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]}})


def _manager(*extra: dict, workers: tuple[str, ...] = ("worker-1",), namespace: str = "Namespace") -> list[dict]:
    return [
        CQ,
        _m("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "mk", spec={
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk-config"}}),
        _m("kueue.x-k8s.io/v1beta2", "MultiKueueConfig", "mk-config", spec={"clusters": list(workers)}),
        _m("kueue.x-k8s.io/v1beta2", "LocalQueue", "c12-training-lq", "c12-training",
           spec={"clusterQueue": "c12-training-cq"}),
        _m("v1", namespace, "c12-training"),
        _m("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "c12-rt", "c12-training", spec={}),
        *extra]


def _rbac(account: tuple[str, str] = ("kueue-system", "multikueue")) -> list[dict]:
    """What the worker grants `account` for batch/job: reads cluster-wide, writes in c12-training."""
    subject = [{"kind": "ServiceAccount", "namespace": account[0], "name": account[1]}]
    return [
        _m(RBAC, "ClusterRole", "mk-read", rules=[
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["get", "list", "watch"]}]),
        _m(RBAC, "ClusterRoleBinding", "mk-read", subjects=subject,
           roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mk-read"}),
        _m(RBAC, "Role", "mk-write", "c12-training", rules=[
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["create", "delete", "update"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch"]}]),
        _m(RBAC, "RoleBinding", "mk-write", "c12-training", subjects=subject,
           roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mk-write"})]


def _complete_worker(*extra: dict) -> list[dict]:
    return [_m("v1", "Namespace", "c12-training"),
            _m("kueue.x-k8s.io/v1beta2", "LocalQueue", "c12-training-lq", "c12-training",
               spec={"clusterQueue": "c12-training-cq"}),
            _m("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "c12-rt", "c12-training", spec={}),
            *_rbac(), *extra]


def _judge(manager: list[dict], worker: list[dict] | None, options: dict | None = None) -> list:
    clusters = {MANAGER: [kube(f"m{i}", m) for i, m in enumerate(manager)]}
    if worker is not None:
        clusters["worker-1"] = [kube(f"w{i}", m) for i, m in enumerate(worker)]
    return check_workers_ready(clusters, JOBS_ONLY if options is None else options)


def _finding(what: str, why: str, fix: str) -> tuple:
    return (POLICY, urn("m0", CQ), QUEUE, "spec.admissionChecksStrategy", MISSING,
            f"worker 'worker-1' lacks {what}: {why}", fix,
            f"The ClusterQueue 'c12-training-cq' dispatches to worker 'worker-1', which lacks {what}: {why}. "
            f"Fix: {fix}.")


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.urn, v.subject, v.field, v.value, v.rule, v.fix, v.message) for v in found]


NAMESPACE = _finding("the namespace c12-training", "a dispatched workload is created on the worker in namespace "
                     "c12-training", "register the Namespace c12-training on the worker")
LOCAL_QUEUE = _finding("the LocalQueue c12-training/c12-training-lq", "the worker's Kueue admits a dispatched "
                       "workload through the LocalQueue of the same namespace and name",
                       "register the LocalQueue c12-training/c12-training-lq on the worker")
RUNTIME = _finding("the TrainingRuntime c12-training/c12-rt", "a dispatched TrainJob names its runtime in its own "
                   "namespace", "register the TrainingRuntime c12-training/c12-rt on the worker")


def test_the_complete_worker_passes():
    assert _judge(_manager(), _complete_worker()) == []


def test_a_worker_lacking_the_namespace_the_queue_and_the_runtime_gets_three_whole_findings():
    """Kills the words of the three findings and `_violation`'s fields (check 96-144, _violation 2-21)."""
    assert whole(_judge(_manager(), _rbac())) == [NAMESPACE, LOCAL_QUEUE, RUNTIME]


def test_a_worker_without_rbac_gets_whole_read_and_write_findings():
    """Kills the RBAC findings' words (166-225): batch/job's reads cluster-wide, its writes in c12-training. (The
    verbs are named as calls: "the manager's Kueue calls get, list, watch on jobs"; before, the rule wrote "get,
    list, watchs jobs".)"""
    found = _judge(_manager(), _complete_worker()[:3])
    account = "ServiceAccount kueue-system/multikueue"
    read = ("the manager's Kueue calls get, list, watch on jobs in every namespace of the worker "
            "(pkg/controller/jobs/job/job_multikueue_adapter.go, Kueue v0.19.2); one refused watch makes the "
            "MultiKueueCluster, the AdmissionCheck and this ClusterQueue inactive")
    write = ("the manager's Kueue calls create, delete on jobs of the workloads it dispatches there "
             "(pkg/controller/jobs/job/job_multikueue_adapter.go, Kueue v0.19.2)")
    assert whole(found)[0] == _finding(
        f"RBAC for jobs (get, list, watch) of {account}", read,
        'grant the ServiceAccount kueue-system/multikueue the ClusterRole rule {apiGroups: ["batch"], resources: '
        '[jobs], verbs: [get, list, watch]}')
    assert whole(found)[2] == _finding(
        f"RBAC for jobs (create, delete) of {account} in namespace c12-training", write,
        f'grant the ServiceAccount kueue-system/multikueue the rule {{apiGroups: ["batch"], resources: [jobs], '
        f'verbs: [create, delete]}} by a Role and RoleBinding in c12-training ({LEAST})')
    assert [v.rule.split(" of ServiceAccount")[0] for v in found] == [
        "worker 'worker-1' lacks RBAC for jobs (get, list, watch)",
        "worker 'worker-1' lacks RBAC for workloads (get, list, watch)",
        "worker 'worker-1' lacks RBAC for jobs (create, delete)",
        "worker 'worker-1' lacks RBAC for workloads (create, delete, update)",
        "worker 'worker-1' lacks RBAC for workloads/status (patch)"]


def test_the_service_account_of_the_worker_comes_from_the_options():
    """Kills the serviceAccounts read (check 16, 18, 146-149): the worker grants team-a/mk, which the options
    name; the default kueue-system/multikueue is granted nothing there."""
    worker = [*_complete_worker()[:3], *_rbac(("team-a", "mk"))]
    assert _judge(_manager(), worker, {**JOBS_ONLY, "serviceAccounts": {"worker-1": "team-a/mk"}}) == []
    assert len(_judge(_manager(), worker)) == 5


def test_the_integrations_come_from_the_options_else_from_the_managers_configuration():
    """Kills the integrations and featureGates reads (check 7, 13, 14): with `integrations: [batch/job]` the batch
    grants are enough; without options, the manager's Kueue Configuration (frameworks batch/job, pod) asks for pods
    too; featureGates MultiKueueOrchestratedPreemption adds a verb."""
    config = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks: "
              "[batch/job, pod]\n")
    config_map = _m("v1", "ConfigMap", "kueue-manager-config", "kueue-system",
                    data={"controller_manager_config.yaml": config})
    found = _judge(_manager(config_map), _complete_worker(), {})
    assert {v.rule.split(" (")[0] for v in found} == {"worker 'worker-1' lacks RBAC for pods"}
    gated = _judge(_manager(), _complete_worker(), {**JOBS_ONLY, "featureGates": {
        "MultiKueueOrchestratedPreemption": True}})
    assert gated and all("RBAC for workloads" in v.rule for v in gated)


def test_a_namespace_made_by_a_namespace_patch_counts_on_both_sides():
    """Kills "NamespacePatch" misspelt (check 43-45, 68-70): a NamespacePatch on the manager makes the namespace
    the queue dispatches from; on the worker it makes it exist there."""
    manager = _manager(namespace="NamespacePatch")
    assert whole(_judge(manager, _complete_worker()[1:])) == [NAMESPACE]
    worker = [_m("v1", "NamespacePatch", "c12-training"), *_complete_worker()[1:]]
    assert _judge(manager, worker) == []


def test_only_namespaces_are_namespaces():
    """Kills `... or not obj.group` (check 38, 63): a core ConfigMap named c12-training is no namespace, on the
    manager (nothing to register) and on the worker (the namespace is still missing)."""
    manager = [m for m in _manager() if m["kind"] != "Namespace"]
    manager.append(_m("v1", "ConfigMap", "c12-training", "default"))
    assert _judge(manager, _complete_worker()[1:]) == []
    worker = [_m("v1", "ConfigMap", "c12-training", "default"), *_complete_worker()[1:]]
    assert whole(_judge(_manager(), worker)) == [NAMESPACE]


def test_only_a_local_queue_is_a_local_queue_on_the_worker():
    """Kills `is_kueue(None)` for the worker's queues (check 73): a Workload named c12-training-lq is no queue."""
    worker = [m for m in _complete_worker() if m["kind"] != "LocalQueue"]
    worker.append(_m("kueue.x-k8s.io/v1beta2", "Workload", "c12-training-lq", "c12-training", spec={}))
    assert whole(_judge(_manager(), worker)) == [LOCAL_QUEUE]


def test_a_worker_the_stack_does_not_reach_does_not_hide_the_next():
    """Kills `continue` -> `break` (check 60): worker-0 is not in the stack (left to `cohorts verify`); worker-1,
    after it, is still judged."""
    assert whole(_judge(_manager(workers=("worker-0", "worker-1")), _rbac())) == [NAMESPACE, LOCAL_QUEUE, RUNTIME]


def test_without_the_manager_there_is_nothing_to_dispatch():
    """Kills `clusters.get(MANAGER, None)` (check 3, 5): only a worker's objects."""
    assert check_workers_ready({"worker-1": [kube("w", m) for m in _complete_worker()]}, JOBS_ONLY) == []


def test_the_declaration_is_the_check():
    """The policy as the pack runs it is this check."""
    assert MULTIKUEUE_WORKERS_READY.check is check_workers_ready
