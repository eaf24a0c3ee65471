"""(issue 33) MultiKueue from the same stack, on two real control planes: the session sandbox is the manager and
`python -m kueue_cohorts.sandbox up --workers 1` starts a worker (its own etcd, kube-apiserver, Kueue 0.19.2, JobSet
and Trainer
controllers and kwok node, on other loopback ports). A stack like dev (names `mk-*`, so that it lives next to the dev
stack on the manager, with the dev stack's trainingRuntime) with `multiKueue` dispatching its training ClusterQueue
to the worker is applied with `pulumi up`: the manager gets the MultiKueueCluster, MultiKueueConfig, AdmissionCheck
and the kubeconfig Secret (a Pulumi secret), the worker the same cohort, LocalQueues, namespaces, checkpoint volume
and TrainingRuntime and the worker identity's RBAC.
Against the real managers:
- a training Job submitted on the manager runs on the worker (its Pod there, none on the manager) and its status
  comes back to the manager's Job;
- a TrainJob of the stack's TrainingRuntime submitted on the manager runs on the worker (the worker's Trainer makes
  its JobSet and Pod there; the manager has neither) and its status comes back to the manager's TrainJob;
- inference reclaiming its quota on the worker evicts the dispatched training Workload there, and the manager sees
  it (its MultiKueue check goes back to Retry, "evicted on worker cluster");
- a rule removed by hand from the worker identity's ClusterRole is reported by `cohorts verify` with the rule to add.

The mk stack sets `multiKueue.managerTrainer: CRDsOnly`, as the settings check requires of a training queue that
dispatches TrainJobs: the pinned Trainer v2.2.1 ignores a TrainJob's spec.managedBy (kubeflow/trainer#3632), so with
its controller on the manager, the manager would run the dispatched TrainJob too once Kueue unsuspends it. `python -m
kueue_cohorts.sandbox up --stack-file <mk>` reads that setting and stops the manager's Trainer controller and deletes
its webhook
configurations (the CRDs stay); `up` with the dev stack at the end of the module starts them again for the files
that follow (test_27_observability, test_28_whatif_agrees_with_kueue, test_99 share the session sandbox). The worker
sandbox starts in this module's fixture only and is stopped after it.
"""

from __future__ import annotations

import copy
import io
import json
import time

import pytest
import yaml
from e2e_support import REPO, SLICE, Cluster, admitted_in, is_true, wait_for
from kubernetes import client as k8s
from kubernetes import config as kconfig
from pulumi import automation as auto

from kueue_cohorts.cohorts import cli as cohorts_cli
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.runtime import render_trainjob
from kueue_cohorts.components.settings import ManagerTrainer, raw_from_stack_file
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.sandbox import cli as sandbox_cli
from kueue_cohorts.sandbox.cluster import TRAINER, Sandbox

KUEUE = ("kueue.x-k8s.io", "v1beta2")
TRAINER_API = ("trainer.kubeflow.org", "v1alpha1")
JOBSET = ("jobset.x-k8s.io", "v1alpha2")
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
TRAINJOB_NAME = "dispatched-tj"
WORKER = "worker-1"
TRAINING_NS, INFERENCE_NS = "mk-training", "mk-inference"
JOB_NAME = "dispatched"
ROLE = "kueue-cohorts-multikueue"
STARTUP: dict[str, float] = {}


def mk_config() -> dict:
    """The dev stack's config (its trainingRuntime included) with every cluster-scoped name and namespace renamed
    c12 -> mk, and a multiKueue block dispatching the training ClusterQueue to worker-1 with the manager serving the
    Trainer's CRDs only (see the module docstring)."""
    raw = raw_from_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
    text = yaml.safe_dump(raw).replace("c12-", "mk-")
    raw = yaml.safe_load(text)
    raw["multiKueue"] = {"workers": [{"name": WORKER}], "managerTrainer": "CRDsOnly",
                         "dispatch": [{"clusterQueue": "mk-training-cq", "workers": [WORKER]}]}
    return {"config": {f"kueue-cohorts:{key}": value for key, value in raw.items()}}


@pytest.fixture(scope="module")
def mk_stack(sandbox, project, tmp_path_factory):
    """The worker sandbox started through `python -m kueue_cohorts.sandbox up --stack-file <mk> --workers 1` (the
    manager, already
    up, reconciles its nodes and, the mk stack being CRDsOnly, stops its Trainer controller and deletes the Trainer's
    webhook configurations), then the mk stack applied with `pulumi up`; destroyed and the worker stopped
    afterwards, and the manager brought back to the dev stack (nodes, Trainer controller and webhooks). Returns the
    stack file."""
    path = tmp_path_factory.mktemp("mk") / "Pulumi.mk.yaml"
    path.write_text(yaml.safe_dump(mk_config(), sort_keys=False))
    start = time.monotonic()
    code = sandbox_cli.main(["up", "--stack-file", str(path), "--workers", "1"])
    STARTUP["worker sandbox"] = time.monotonic() - start
    worker = Sandbox(sandbox.paths.worker(WORKER), worker=WORKER)
    try:
        if code != 0:
            pytest.fail(f"`python -m kueue_cohorts.sandbox up --workers 1` exited {code}; logs in {worker.paths.logs}",
                        pytrace=False)
        project.add_stack("mk", path)
        start = time.monotonic()
        project.run("mk", "up")
        STARTUP["pulumi up"] = time.monotonic() - start
        yield path
        project.run("mk", "destroy")
    finally:
        worker.down(purge=True)  # no stopped worker left for `sandbox status` (test_99) to report
        sandbox.up(stack_path("dev"))  # the manager's nodes and Trainer controller as the other tests expect them


@pytest.fixture(scope="module")
def worker(mk_stack, sandbox) -> Cluster:
    """Kubernetes client APIs on the worker sandbox (its admin kubeconfig)."""
    return Cluster(kconfig.new_client_from_config(config_file=str(sandbox.paths.worker(WORKER).kubeconfig)))


def _workload(cluster: Cluster, namespace: str, uid: str) -> dict | None:
    items = cluster.custom.list_namespaced_custom_object(*KUEUE, namespace, "workloads",
                                                         label_selector=f"kueue.x-k8s.io/job-uid={uid}")["items"]
    return items[0] if items else None


def _check(workload: dict | None) -> dict:
    """The workload's MultiKueue admission check state (status.admissionChecks[])."""
    checks = ((workload or {}).get("status") or {}).get("admissionChecks") or []
    return next((c for c in checks if c["name"] == "mk-training-cq-multikueue"), {})


def _pods(cluster: Cluster, namespace: str, selector: str) -> list:
    pods = cluster.core.list_namespaced_pod(namespace, label_selector=selector).items
    return [p for p in pods if p.metadata.deletion_timestamp is None and p.status.phase == "Running"]


@pytest.fixture
def training_job(cluster, worker):
    """A training Job (the whole GPU slice, borrowed) submitted on the manager; deleted afterwards with the worker's
    inference Job, and MultiKueue's copies on the worker gone."""
    job = cluster.submit_job(TRAINING_NS, JOB_NAME, "mk-training-lq", SLICE, priority_class="mk-training-prio")
    yield job
    for inference in worker.batch.list_namespaced_job(INFERENCE_NS).items:
        worker.delete_job(inference)
    cluster.delete_job(job)
    wait_for(lambda: not cluster.kueue_objects("workloads", TRAINING_NS), 120, "the manager's Workload to be gone")
    wait_for(lambda: not worker.batch.list_namespaced_job(TRAINING_NS).items, 120,
             "MultiKueue to delete the worker's Job")


def test_the_stack_registers_multikueue_on_the_manager_and_the_cohorts_on_the_worker(cluster, worker, mk_stack):
    mkc = cluster.custom.get_cluster_custom_object(*KUEUE, "multikueueclusters", WORKER)
    active = wait_for(lambda: is_true(cluster.custom.get_cluster_custom_object(*KUEUE, "multikueueclusters", WORKER),
                                      "Active"), 90, "the manager's Kueue to connect to the worker")
    assert active and mkc["spec"]["clusterSource"]["kubeConfig"] == {"location": f"{WORKER}-multikueue",
                                                                     "locationType": "Secret"}
    cq = cluster.cluster_queue("mk-training-cq")
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "mk-training-cq-multikueue"}]}
    wait_for(lambda: is_true(cluster.cluster_queue("mk-training-cq"), "Active"), 60,
             "the dispatching ClusterQueue to be active (its MultiKueue check is)")
    assert "admissionChecksStrategy" not in worker.cluster_queue("mk-training-cq")["spec"]
    assert {lq["metadata"]["name"] for lq in worker.kueue_objects("localqueues", TRAINING_NS)} == {"mk-training-lq"}
    secret = cluster.core.read_namespaced_secret(f"{WORKER}-multikueue", "kueue-system")
    assert set(secret.data) == {"kubeconfig"}
    print(f"\n[multikueue e2e] worker sandbox up: {STARTUP.get('worker sandbox', 0):.0f} s, "
          f"pulumi up of the two clusters: {STARTUP.get('pulumi up', 0):.0f} s")


INTRUDER = "e2e-intruder"


def _intruder(sandbox) -> k8s.ApiClient:
    """The manager's admin impersonating a user outside the stack's identities, in system:masters (RBAC allows
    everything: only admission decides)."""
    api = kconfig.new_client_from_config(config_file=str(sandbox.paths.kubeconfig))
    api.set_default_header("Impersonate-User", INTRUDER)
    api.set_default_header("Impersonate-Group", "system:masters")
    return api


def _refused(call) -> str:
    with pytest.raises(k8s.ApiException) as err:
        call()
    message = json.loads(err.value.body)["message"]
    assert err.value.status == 403, message
    assert "ValidatingAdmissionPolicy 'kueue-cohorts.mk-shared.multikueue-writers'" in message, message
    assert f"(requested by {INTRUDER})" in message, message
    return message


def test_an_intruder_cannot_redirect_dispatch_through_any_request_shape(cluster, sandbox, mk_stack):
    """Issue 38 class 4: whoever writes the MultiKueueCluster, MultiKueueConfig, AdmissionCheck or the worker's
    kubeconfig Secret could point dispatch at their own cluster. Each shape is refused for an intruder (dry-run):
    an update of the decisive fields, the same through the v1beta1 API, a delete, a collection delete; a status
    write cannot change them (the CRD's status strategy keeps only status) and a label is not what decides."""
    custom = k8s.CustomObjectsApi(_intruder(sandbox))
    core = k8s.CoreV1Api(_intruder(sandbox))
    elsewhere = {"spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "attacker"}}}}
    message = _refused(lambda: custom.patch_cluster_custom_object(*KUEUE, "multikueueclusters", WORKER, elsewhere,
                                                                  dry_run="All"))
    assert f"MultiKueueCluster '{WORKER}'" in message
    # v1beta1 spells it spec.kubeConfig (apis/kueue/v1beta1/multikueue_types.go); converted, the same change
    _refused(lambda: custom.patch_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta1", "multikueueclusters", WORKER,
        {"spec": {"kubeConfig": {"locationType": "Secret", "location": "attacker"}}}, dry_run="All"))
    _refused(lambda: custom.patch_cluster_custom_object(*KUEUE, "multikueueconfigs", "mk-training-cq-multikueue",
                                                        {"spec": {"clusters": ["attacker"]}}, dry_run="All"))
    _refused(lambda: custom.delete_cluster_custom_object(*KUEUE, "admissionchecks", "mk-training-cq-multikueue",
                                                         dry_run="All"))
    _refused(lambda: custom.delete_collection_cluster_custom_object(*KUEUE, "multikueueclusters", dry_run="All"))
    secret = f"{WORKER}-multikueue"
    _refused(lambda: core.patch_namespaced_secret(secret, "kueue-system", {"stringData": {"kubeconfig": "x"}},
                                                  dry_run="All"))
    _refused(lambda: core.delete_collection_namespaced_secret("kueue-system", dry_run="All",
                                                              field_selector=f"metadata.name={secret}"))
    # the status subresource keeps the spec: allowed, and the spec stays the stack's
    status = custom.patch_cluster_custom_object_status(*KUEUE, "multikueueclusters", WORKER, elsewhere, dry_run="All")
    assert status["spec"]["clusterSource"]["kubeConfig"]["location"] == secret
    custom.patch_cluster_custom_object(*KUEUE, "multikueueclusters", WORKER, {"metadata": {"labels": {"x": "y"}}},
                                       dry_run="All")
    # the stack's identity may (what pulumi up does)
    cluster.custom.patch_cluster_custom_object(*KUEUE, "multikueueconfigs", "mk-training-cq-multikueue",
                                               {"spec": {"clusters": [WORKER]}}, dry_run="All")


def test_a_job_submitted_on_the_manager_runs_on_the_worker_and_its_status_comes_back(cluster, worker, training_job,
                                                                                     mk_stack):
    uid = training_job.metadata.uid
    assert cluster.read_job(training_job).spec.managed_by == "kueue.x-k8s.io/multikueue", \
        "Kueue's Job webhook hands a Job of a dispatching queue to MultiKueue"
    wait_for(lambda: (w := _workload(cluster, TRAINING_NS, uid)) and _check(w).get("state") == "Ready"
             and (w.get("status") or {}).get("clusterName") == WORKER and admitted_in(w) == "mk-training-cq", 120,
             "the manager to dispatch the Job's Workload to worker-1 and admit it")
    remote = wait_for(lambda: next(iter(worker.batch.list_namespaced_job(TRAINING_NS).items), None), 60,
                      "MultiKueue to create the Job on the worker")
    assert remote.metadata.name == JOB_NAME and remote.metadata.labels["kueue.x-k8s.io/multikueue-origin"]
    assert remote.spec.managed_by in (None, "kubernetes.io/job-controller"), "the worker's Job controller runs it"
    pods = wait_for(lambda: _pods(worker, TRAINING_NS, f"job-name={JOB_NAME}"), 120,
                    "the training Pod to run on the worker")
    assert pods[0].spec.node_name == "gpu-0"
    wl = next(iter(worker.kueue_objects("workloads", TRAINING_NS)))
    assert admitted_in(wl) == "mk-training-cq", "the worker's Kueue admitted it in the worker's own queue"
    assert not cluster.core.list_namespaced_pod(TRAINING_NS).items, "nothing runs on the manager"

    def status_synced() -> bool:
        here = cluster.read_job(training_job).status
        there = worker.batch.read_namespaced_job(JOB_NAME, TRAINING_NS).status
        return bool(here.active) and (here.active, here.ready) == (there.active, there.ready) and here.start_time

    wait_for(status_synced, 90, "the worker's Job status (an active, ready Pod) to be copied to the manager's Job")
    out = io.StringIO()
    assert cohorts_cli.main(["status", "--stack-file", str(mk_stack)], out, io.StringIO()) == 0
    text = out.getvalue()
    assert f"on worker {WORKER}:" in text and f"worker {WORKER}" in text.split(f"on worker {WORKER}:", 1)[1], text


def _trainjob(cluster: Cluster) -> dict | None:
    try:
        return cluster.custom.get_namespaced_custom_object(*TRAINER_API, TRAINING_NS, "trainjobs", TRAINJOB_NAME)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _jobsets(cluster: Cluster) -> list[dict]:
    return cluster.custom.list_namespaced_custom_object(*JOBSET, TRAINING_NS, "jobsets")["items"]


def _hooks(cluster: Cluster) -> set[str]:
    """The names of the cluster's Trainer webhook configurations (`*.trainer.kubeflow.org`)."""
    admission = k8s.AdmissionregistrationV1Api(cluster.api)
    configs = (admission.list_mutating_webhook_configuration().items
               + admission.list_validating_webhook_configuration().items)
    return {c.metadata.name for c in configs if c.metadata.name.endswith(".trainer.kubeflow.org")}


@pytest.fixture
def trainjob(cluster, worker, mk_stack):
    """A TrainJob of the mk stack's TrainingRuntime (the whole GPU slice, borrowed) submitted on the manager; deleted
    afterwards, and MultiKueue's copy on the worker gone with its JobSet and Pods."""
    runtime = load_stack_file(mk_stack).training_runtime
    manifest = render_trainjob(TRAINJOB_NAME, TRAINING_NS, runtime.name, "mk-training-lq", "mk-training-prio")
    yield cluster.custom.create_namespaced_custom_object(*TRAINER_API, TRAINING_NS, "trainjobs", manifest)
    try:
        cluster.custom.delete_namespaced_custom_object(*TRAINER_API, TRAINING_NS, "trainjobs", TRAINJOB_NAME)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise
    wait_for(lambda: not cluster.kueue_objects("workloads", TRAINING_NS) and _trainjob(cluster) is None, 120,
             "the manager's TrainJob and Workload to be gone")
    wait_for(lambda: _trainjob(worker) is None and not _jobsets(worker)
             and not worker.core.list_namespaced_pod(TRAINING_NS).items, 120,
             "MultiKueue to delete the worker's TrainJob, and its JobSet and Pods to be gone")


def test_a_trainjob_submitted_on_the_manager_runs_on_the_worker_and_its_status_comes_back(cluster, worker, trainjob,
                                                                                          sandbox):
    assert sandbox.state().manager_trainer == ManagerTrainer.CRDS_ONLY and TRAINER not in sandbox.state().processes, \
        "`sandbox up` of the CRDsOnly mk stack stopped the manager's Trainer controller"
    assert not _hooks(cluster), "and deleted its webhook configurations (else every TrainJob would be refused)"
    assert _hooks(worker) == {"defaulter.trainer.kubeflow.org", "validator.trainer.kubeflow.org"}
    uid = trainjob["metadata"]["uid"]
    assert trainjob["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue", \
        "Kueue's TrainJob webhook hands a TrainJob of a dispatching queue to MultiKueue"
    wait_for(lambda: (w := _workload(cluster, TRAINING_NS, uid)) and _check(w).get("state") == "Ready"
             and (w.get("status") or {}).get("clusterName") == WORKER and admitted_in(w) == "mk-training-cq", 120,
             "the manager to dispatch the TrainJob's Workload to worker-1 and admit it")
    remote = wait_for(lambda: _trainjob(worker), 60, "MultiKueue to create the TrainJob on the worker")
    assert remote["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"]
    assert remote["spec"].get("managedBy", "trainer.kubeflow.org/trainjob-controller") == \
        "trainer.kubeflow.org/trainjob-controller", "MultiKueue clears managedBy: the worker's Trainer runs it"
    jobset = wait_for(lambda: next((j for j in _jobsets(worker) if j["metadata"]["name"] == TRAINJOB_NAME), None), 60,
                      "the worker's Trainer to create the JobSet")
    owner = next(o for o in jobset["metadata"]["ownerReferences"] if o.get("controller"))
    assert (owner["kind"], owner["uid"]) == ("TrainJob", remote["metadata"]["uid"])
    pods = wait_for(lambda: _pods(worker, TRAINING_NS, f"{JOBSET_NAME_LABEL}={TRAINJOB_NAME}"), 120,
                    "the training Pod to run on the worker")
    assert [p.spec.node_name for p in pods] == ["gpu-0"]
    wl = next(iter(worker.kueue_objects("workloads", TRAINING_NS)))
    assert admitted_in(wl) == "mk-training-cq", "the worker's Kueue admitted it in the worker's own queue"

    def status_synced() -> dict | None:
        here, there = (_trainjob(cluster) or {}).get("status"), (_trainjob(worker) or {}).get("status")
        active = [j for j in (there or {}).get("jobsStatus") or [] if j.get("active")]
        return here if active and here == there else None

    status = wait_for(status_synced, 90, "the worker's TrainJob status (an active child Job) to be copied to the "
                      "manager's TrainJob")
    assert [j["name"] for j in status["jobsStatus"]] == ["node"]
    assert (_trainjob(cluster) or {})["spec"]["suspend"] is False, \
        "Kueue unsuspended the manager's TrainJob: a Trainer v2.2.1 controller there would run it"
    assert not [j for j in _jobsets(cluster) if j["metadata"]["name"] == TRAINJOB_NAME], "no JobSet on the manager"
    assert not cluster.core.list_namespaced_pod(TRAINING_NS).items, "nothing runs on the manager"


def test_inference_reclaiming_on_the_worker_is_seen_on_the_manager(cluster, worker, training_job):
    uid = training_job.metadata.uid
    wait_for(lambda: _pods(worker, TRAINING_NS, f"job-name={JOB_NAME}"), 180,
             "the dispatched training Pod to run on the worker")
    remote_wl = wait_for(lambda: next(iter(worker.kueue_objects("workloads", TRAINING_NS)), None), 30,
                         "the worker's copy of the Workload")
    local_uid = wait_for(lambda: _workload(cluster, TRAINING_NS, uid), 30, "the manager's Workload")["metadata"]["uid"]
    serve = worker.submit_job(INFERENCE_NS, "serve", "mk-inference-lq", SLICE, priority_class="mk-inference-prio")
    wait_for(lambda: admitted_in(worker.workload_of(serve)) == "mk-inference-cq", 120,
             "inference to be admitted on the worker")

    def preempted_on_worker() -> list:  # an Event: the manager may delete the worker's copy right after
        events = worker.core.list_namespaced_event(TRAINING_NS).items
        return [e for e in events if e.reason == "Preempted" and e.involved_object.name == remote_wl["metadata"]["name"]
                and "reclamation within the cohort" in (e.message or "")]

    wait_for(preempted_on_worker, 60, "the worker's Kueue to preempt the dispatched Workload (InCohortReclamation)")

    def seen_on_manager() -> list:
        events = cluster.core.list_namespaced_event(TRAINING_NS).items
        return [e for e in events if e.reason == "MultiKueue" and "evicted on worker cluster" in (e.message or "")
                and e.involved_object.uid == local_uid]

    event = wait_for(seen_on_manager, 120, "the manager to record the eviction on worker-1")
    assert WORKER in event[0].message


def test_verify_names_the_rbac_rule_a_worker_lost(cluster, worker, mk_stack):
    out, err = io.StringIO(), io.StringIO()
    assert cohorts_cli.main(["verify", "--stack-file", str(mk_stack)], out, err) in (0, 1), err.getvalue()
    assert "[worker worker-1]" not in out.getvalue(), out.getvalue()
    rbac = k8s.RbacAuthorizationV1Api(worker.api)
    # reads cluster-wide in the ClusterRole; writes in a Role of each dispatched namespace (issue 38 class 2)
    _lose_trainjobs_and_verify(mk_stack, lambda: rbac.read_cluster_role(ROLE),
                               lambda role: rbac.replace_cluster_role(ROLE, role), f"ClusterRole {ROLE}",
                               f"{TRAINJOBS_RULE}verbs: [get, list, watch]}}")
    _lose_trainjobs_and_verify(mk_stack, lambda: rbac.read_namespaced_role(ROLE, TRAINING_NS),
                               lambda role: rbac.replace_namespaced_role(ROLE, TRAINING_NS, role),
                               f"Role {TRAINING_NS}/{ROLE}",
                               f"{TRAINJOBS_RULE}verbs: [create, delete]}}")


TRAINJOBS_RULE = '{apiGroups: ["trainer.kubeflow.org"], resources: [trainjobs], '


def _lose_trainjobs_and_verify(mk_stack, read, replace, where: str, wanted: str) -> None:
    """Drop the trainjobs rule of the role ``read`` returns, check that `verify` fails naming ``where`` and the rule
    ``wanted`` on the worker, then put the rules back."""
    role = read()
    original = copy.deepcopy(role.rules)
    role.rules = [r for r in role.rules if r.resources != ["trainjobs"]]
    replace(role)
    try:
        out, err = io.StringIO(), io.StringIO()
        assert cohorts_cli.main(["verify", "--stack-file", str(mk_stack)], out, err) == 1
        lines = [line for line in out.getvalue().splitlines() if "[worker worker-1]" in line]
        assert any(where in line and wanted in line for line in lines), out.getvalue()
    finally:
        role = read()
        role.rules = original
        replace(role)


def test_a_crds_only_manager_that_has_the_trainers_webhooks_is_refused_before_any_change(cluster, project, mk_stack):
    """The preflight of a CRDsOnly stack reads the manager's webhook configurations: one of the Trainer's there (an
    installed Trainer) refuses the run, naming the setting, the configuration and the fix."""
    admission = k8s.AdmissionregistrationV1Api(cluster.api)
    admission.create_validating_webhook_configuration(
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "validator.trainer.kubeflow.org"}})
    try:
        with pytest.raises(auto.CommandError) as refused:
            project.run("mk", "preview")
        text = str(refused.value)
        assert "manager-trainer-not-crds-only: kueue-cohorts:multiKueue.managerTrainer = 'CRDsOnly'" in text, text
        assert "(validator.trainer.kubeflow.org)" in text and "Fix: on the manager, uninstall" in text, text
    finally:
        admission.delete_validating_webhook_configuration("validator.trainer.kubeflow.org")
    project.run("mk", "preview")  # without it, the same preflight lets the run through
