"""checkpoint-safe-runtime, kueue-manager-config and kueue-api-version."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.checkpoint_safe_runtime import check_checkpoint_safe_runtime
from kueue_cohorts.policy.rules.kueue_api_version import check_kueue_api_version
from kueue_cohorts.policy.rules.kueue_manager_config import check_kueue_manager_config, duration_problem
from kueue_cohorts.policy.rules.vocabulary.selectors import matches as selector_matches
from kueue_cohorts.policy.rules.vocabulary.signals import signal_problem
from tests.policy.fixtures import (
    SAFE_MANAGER_CONFIG,
    UNKNOWN,
    checkpoint_pvc,
    compliant,
    kube,
    kueue_config_map,
    messages,
    stack,
    urn,
)

RUNTIME = "The TrainingRuntime 'c12-training/c12-checkpoint-runtime'"
POD = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"


def _pod(manifests):
    return manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


# --- checkpoint-safe-runtime -----------------------------------------------------------------------------------------

def test_compliant_runtime_passes():
    assert check_checkpoint_safe_runtime(stack(compliant())) == []


def test_guide_runtime_without_exec_fails():
    manifests = compliant()
    _pod(manifests)["containers"][0]["args"] = ["mkdir -p \"$CKPT_DIR\"\npython -m trainer.entrypoint"]
    violations = check_checkpoint_safe_runtime(stack(manifests))
    assert messages(violations) == [
        f"{RUNTIME} trainer container 'node' ({POD}.containers[0]) wraps the trainer in 'bash -c' without exec, so "
        "bash stays PID 1 and SIGTERM never reaches it; start the trainer in exec form (command: [python, train.py]) "
        "or end the script with 'exec <trainer>'."]
    assert violations[0].urn == urn("runtime", manifests["runtime"])


@pytest.mark.parametrize("command,args,problem", [
    (["python", "train.py"], [], None),
    ([], ["--epochs", "3"], None),
    (["/bin/sh", "-c", "exec python train.py"], [], None),
    (["sh", "-c"], ["set -e; cd /w && exec torchrun train.py"], None),
    (["bash", "-ec"], ["if [ -d x ]; then exec python a.py; fi"], None),
    (["/usr/bin/env", "bash", "-c", "python train.py"], [],
     "wraps the trainer in 'bash -c' without exec, so bash stays PID 1 and SIGTERM never reaches it (some shells exec "
     "a lone command of -c, others fork it: that depends on the image's shell and version)"),
    (["sh", "-c", "exec 2>&1; python train.py"], [],
     "wraps the trainer in 'sh -c' without exec, so sh stays PID 1 and SIGTERM never reaches it"),
    (["bash", "/opt/run.sh"], [], "runs 'bash /opt/run.sh', a bash script that this policy cannot see into"),
    (["sh", "-c"], [], "runs 'sh -c' without a script"),
])
def test_shell_wrapper_detection(command, args, problem):
    assert signal_problem(command, args) == problem


def test_grace_period_default_30_is_too_short():
    manifests = compliant()
    del _pod(manifests)["terminationGracePeriodSeconds"]
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} has {POD}.terminationGracePeriodSeconds not set (Kubernetes default 30); it must be at least 60 "
        "and above the declared checkpoint save time of 30 seconds, so that a preempted trainer can finish writing its "
        "checkpoint before it is killed."]


def test_grace_period_must_exceed_declared_save_time():
    manifests = compliant()
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] = "90"
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} has {POD}.terminationGracePeriodSeconds 90; it must be at least 60 and above the declared "
        "checkpoint save time of 90 seconds, so that a preempted trainer can finish writing its checkpoint before it "
        "is killed."]


def test_configured_minimum_applies():
    assert len(check_checkpoint_safe_runtime(stack(compliant()), min_grace_seconds=120)) == 1
    manifests = compliant()
    del manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"]
    assert check_checkpoint_safe_runtime(stack(manifests), min_grace_seconds=90) == []


def test_bad_save_seconds_annotation_fails():
    manifests = compliant()
    manifests["runtime"]["metadata"]["annotations"]["kueue-cohorts/checkpoint-save-seconds"] = "soon"
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} declares kueue-cohorts/checkpoint-save-seconds: 'soon', which is not a number of seconds; write "
        "the checkpoint save time in seconds, e.g. \"20\"."]


def test_read_write_once_claim_fails():
    manifests = compliant()
    manifests["ckpt"] = checkpoint_pvc("ReadWriteOnce")
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} mounts PersistentVolumeClaim 'c12-ckpt', which is not ReadWriteMany; checkpoints must be on a "
        "ReadWriteMany claim so that a re-admitted pod on another node can read them."]


def test_claim_outside_the_stack_fails_closed():
    manifests = compliant()
    del manifests["ckpt"]
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} mounts PersistentVolumeClaim 'c12-ckpt', which is not in this stack, so its access mode cannot be "
        "checked and the policy fails closed; define the claim in this stack with accessModes [ReadWriteMany]."]


def test_no_claim_mounted_fails():
    manifests = compliant()
    _pod(manifests)["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        f"{RUNTIME} mounts no PersistentVolumeClaim into its trainer container ({POD}); mount a ReadWriteMany claim "
        "for checkpoints, so that a re-admitted pod on another node resumes from them."]


def test_exempt_runtime_is_skipped():
    manifests = compliant()
    del _pod(manifests)["terminationGracePeriodSeconds"]
    assert check_checkpoint_safe_runtime(stack(manifests), exempt_runtimes=["c12-checkpoint-runtime"]) == []


def test_trainjob_command_override_is_checked():
    manifests = compliant()
    manifests["trainjob"] = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                             "metadata": {"name": "t1", "namespace": "c12-training"},
                             "spec": {"runtimeRef": {"name": "c12-checkpoint-runtime", "kind": "TrainingRuntime"},
                                      "trainer": {"command": ["sh", "-c", "python train.py"]}}}
    assert messages(check_checkpoint_safe_runtime(stack(manifests))) == [
        "The TrainJob 'c12-training/t1' spec.trainer wraps the trainer in 'sh -c' without exec, so sh stays PID 1 and "
        "SIGTERM never reaches it (some shells exec a lone command of -c, others fork it: that depends on the image's "
        "shell and version); start the trainer in exec form or end the script with 'exec <trainer>'."]


def test_unknown_grace_period_fails_closed():
    manifests = compliant()
    _pod(manifests)["terminationGracePeriodSeconds"] = UNKNOWN
    [violation] = check_checkpoint_safe_runtime(stack(manifests))
    assert violation.message.startswith(f"{RUNTIME} has {POD}.terminationGracePeriodSeconds unknown at preview")


# --- kueue-manager-config --------------------------------------------------------------------------------------------

CM = ("The Kueue Configuration in data['controller_manager_config.yaml'] of the ConfigMap "
      "'kueue-system/kueue-manager-config'")


def _config(text):
    return kube("kueue-config", kueue_config_map(text))


def test_safe_configuration_passes():
    assert check_kueue_manager_config(_config(SAFE_MANAGER_CONFIG)) == []


def test_manage_all_jobs_without_selector_fails():
    text = SAFE_MANAGER_CONFIG.split("managedJobsNamespaceSelector")[0] + "waitForPodsReady:\n  timeout: 5m\n"
    assert messages(check_kueue_manager_config(_config(text))) == [
        f"{CM} sets manageJobsWithoutQueueName: true without a managedJobsNamespaceSelector, so Kueue would suspend "
        "jobs in every namespace; add managedJobsNamespaceSelector with matchExpressions [{key: "
        "kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}]."]


def test_selector_that_still_selects_kueue_namespace_fails():
    text = SAFE_MANAGER_CONFIG.replace("values: [kube-system, kueue-system]", "values: [kube-system]")
    assert messages(check_kueue_manager_config(_config(text))) == [
        f"{CM} sets manageJobsWithoutQueueName: true with a managedJobsNamespaceSelector that selects 'kueue-system', "
        "so Kueue would suspend system pods; exclude them, e.g. {key: kubernetes.io/metadata.name, operator: NotIn, "
        "values: [kube-system, kueue-system]}."]


def test_missing_wait_for_pods_ready_fails():
    text = SAFE_MANAGER_CONFIG.split("waitForPodsReady")[0]
    assert messages(check_kueue_manager_config(_config(text))) == [
        f"{CM} has no waitForPodsReady; add waitForPodsReady with a timeout (e.g. timeout: 10m) so that an admitted "
        "workload whose pods never start gives its quota back."]


def test_zero_timeout_fails():
    text = SAFE_MANAGER_CONFIG.replace("timeout: 10m", "timeout: 0s")
    assert messages(check_kueue_manager_config(_config(text))) == [
        f"{CM} has waitForPodsReady.timeout '0s'; set a positive duration such as 10m."]


def test_v1beta1_needs_enable():
    text = SAFE_MANAGER_CONFIG.replace("config.kueue.x-k8s.io/v1beta2", "config.kueue.x-k8s.io/v1beta1")
    assert messages(check_kueue_manager_config(_config(text))) == [
        f"{CM} does not set waitForPodsReady.enable: true (config v1beta1); enable it."]


def test_helm_chart_values_are_checked():
    chart = {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": "kueue"},
             "values": {"managerConfig": {"controllerManagerConfigYaml": SAFE_MANAGER_CONFIG.replace(
                 "timeout: 10m", "blockAdmission: true")}}}
    obj = kube("kueue", chart)
    assert obj.resource_name == "kueue" and obj.group == "helm.sh"
    assert messages(check_kueue_manager_config(obj)) == [
        "The Kueue Configuration in values.managerConfig.controllerManagerConfigYaml of the Chart 'kueue' has "
        "waitForPodsReady.timeout missing; set a positive duration such as 10m."]


def test_unrelated_config_maps_are_ignored():
    assert check_kueue_manager_config(kube("cm", {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "x"}, "data": {"a": "b: c"}})) == []


def test_unknown_configuration_fails_closed():
    [violation] = check_kueue_manager_config(_config(UNKNOWN))
    assert violation.message.startswith("The ConfigMap 'kueue-system/kueue-manager-config' has "
                                        "data[\"controller_manager_config.yaml\"] unknown at preview")


def test_unknown_values_of_unrelated_config_maps_and_charts_are_skipped():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"url": UNKNOWN}}
    chart = {"apiVersion": "helm.sh/v4", "kind": "Chart", "chart": "ingress-nginx", "values": UNKNOWN}
    assert check_kueue_manager_config(kube("app", cm)) == []
    assert check_kueue_manager_config(kube("ingress", chart)) == []
    chart["chart"] = "oci://registry.k8s.io/kueue/charts/kueue"
    [violation] = check_kueue_manager_config(kube("queueing", chart))
    assert violation.message.startswith("The Chart 'queueing' has values unknown at preview")


@pytest.mark.parametrize("text,problem", [("10m", None), ("1h30m", None), (".5m", None), ("0", "not positive"),
                                          ("0s", "not positive"), ("9999999h", "not a Go duration"),
                                          ("10", "not a Go duration"), ("", "not a Go duration"),
                                          ("5 m", "not a Go duration")])
def test_the_timeout_is_judged_by_gos_own_duration_grammar(text, problem):
    found = duration_problem(text)
    assert (found is None) if problem is None else (problem in found)


def test_label_selector_semantics():
    name = {"kubernetes.io/metadata.name": "kube-system"}
    assert selector_matches({}, name)
    assert not selector_matches({"matchLabels": {"team": "a"}}, name)
    assert selector_matches({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, name)
    assert not selector_matches({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                       "values": ["kube-system"]}]}, name)


# --- kueue-api-version -----------------------------------------------------------------------------------------------

def test_v1beta2_objects_pass():
    assert [v for o in stack(compliant()) for v in check_kueue_api_version(o)] == []


def test_v1beta1_cluster_queue_gets_its_migration():
    manifest = compliant()["inference-cq"]
    manifest["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    manifest["spec"]["cohort"] = manifest["spec"].pop("cohortName")
    manifest["spec"]["flavorFungibility"] = {"whenCanBorrow": "Borrow"}
    violations = check_kueue_api_version(kube("inference-cq", manifest))
    assert messages(violations) == [
        "The ClusterQueue 'c12-inference-cq' uses kueue.x-k8s.io/v1beta1, which Kueue deprecates since v0.16; migrate "
        "it to kueue.x-k8s.io/v1beta2: set apiVersion: kueue.x-k8s.io/v1beta2; rename spec.cohort to "
        "spec.cohortName; replace flavorFungibility.whenCanBorrow Borrow with MayStopSearch."]
    assert violations[0].urn.endswith("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue::inference-cq")


def test_v1beta1_local_queue_needs_only_the_version():
    manifest = compliant()["inference-lq"]
    manifest["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert messages(check_kueue_api_version(kube("lq", manifest))) == [
        "The LocalQueue 'c12-inference/c12-inference-lq' uses kueue.x-k8s.io/v1beta1, which Kueue deprecates since "
        "v0.16; migrate it to kueue.x-k8s.io/v1beta2: set apiVersion: kueue.x-k8s.io/v1beta2; its fields need no "
        "change."]


def test_v1beta2_cluster_queue_with_v1beta1_cohort_field_fails():
    manifest = compliant()["training-cq"]
    manifest["spec"]["cohort"] = manifest["spec"].pop("cohortName")
    assert messages(check_kueue_api_version(kube("training-cq", manifest))) == [
        "The ClusterQueue 'c12-training-cq' sets spec.cohort, a kueue.x-k8s.io/v1beta1 field that "
        "kueue.x-k8s.io/v1beta2 does not have (the API server drops it and the queue joins no cohort); rename it to "
        "spec.cohortName."]
