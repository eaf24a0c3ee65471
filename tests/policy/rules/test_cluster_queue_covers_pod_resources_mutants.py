"""cluster-queue-covers-pod-resources: what the policy-cluster-queue-covers-pod-resources mutation run found no test
pinning down. Each finding kind written out whole (policy, object, field, value, message): quota a Configuration
takes out of play (one queue, several, more than five), a tenant namespace its managedJobsNamespaceSelector does not
select (with the labels the stack gives it), a framework it does not manage (more than three users), a GPU no queue
quotas that it drops, a ClusterQueue that leaves cpu or memory uncovered, and the policy option standing for a
Kueue the stack does not install. Kueue 0.19.2: `apis/config/v1beta2/configuration_types.go` (Resources,
managedJobsNamespaceSelector, integrations), `pkg/scheduler/flavorassigner` (an uncovered resource is never admitted).
"""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef
from tests.policy.fixtures import GPU_RESOURCES, UNKNOWN, cluster_queue, compliant, stack
from tests.policy.rules.test_cluster_queue_covers_pod_resources import _carrier, _config

POLICY = "cluster-queue-covers-pod-resources"
CONFIG_MAP = ObjectRef("ConfigMap", "kueue-system", "kueue-manager-config")
WHERE = "data['controller_manager_config.yaml']"
ZERO = {k: "0" for k in GPU_RESOURCES}


def findings(manifests: dict[str, dict], config: dict | None = None) -> list[tuple[Any, ...]]:
    """(policy, subject, field, value, message) of the policy's findings through the rule book."""
    return [(v.policy, v.subject, v.field, v.value, v.message) for rule, v in run(stack(manifests), config or {})
            if rule.name == POLICY]


def with_config(**extra: Any) -> dict[str, dict]:
    manifests = compliant()
    manifests["kueue-config"] = _carrier(_config(**extra), "data")
    return manifests


def out_of_play(queues: str, resource: str, why: str) -> str:
    return (f"The Kueue Configuration in {WHERE} of the ConfigMap 'kueue-system/kueue-manager-config' takes quota out "
            f"of play: {queues} quota '{resource}', but {why}; remove the entry that drops or replaces '{resource}', "
            f"or take '{resource}' out of these queues' quota.")


def test_quota_an_exclusion_prefix_drops_is_one_whole_finding_per_resource():
    """excludeResourcePrefixes ['nvidia.com/gpum'] drops gpumem, which both queues quota: one finding, the two queues
    named (plural), the field and the resource as value."""
    why = ("resources.excludeResourcePrefixes entry 'nvidia.com/gpum' drops 'nvidia.com/gpumem' from every "
           "workload's requests before admission, so Kueue admits pods that use it without counting it")
    assert findings(with_config(resources={"excludeResourcePrefixes": ["nvidia.com/gpum"]})) == [(
        POLICY, CONFIG_MAP, f"{WHERE}.resources.excludeResourcePrefixes", "nvidia.com/gpumem",
        out_of_play("ClusterQueues 'c12-inference-cq', 'c12-training-cq'", "nvidia.com/gpumem", why))]


def test_quota_of_one_queue_and_of_more_than_five_is_named_so():
    """'example.com/credits' quoted by one queue: "ClusterQueue 'x'"; 'nvidia.com/gpumem' quoted by seven: the first
    five and "and more" (kills the mutants of the singular and of the cut)."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["nvidia.com/gpum", "example.com/"]})
    solo = cluster_queue("solo-cq", "tenant", ZERO, None, cohort="solo")
    group = solo["spec"]["resourceGroups"][0]
    group["coveredResources"] = [*group["coveredResources"], "example.com/credits"]
    group["flavors"][0]["resources"].append({"name": "example.com/credits", "nominalQuota": "1"})
    manifests["solo"] = solo
    for i in range(4):
        manifests[f"t{i}"] = cluster_queue(f"t{i}-cq", "tenant", ZERO, None, cohort=f"t{i}")
    found = {f[3]: f[4] for f in findings(manifests)}
    credits_why = ("resources.excludeResourcePrefixes entry 'example.com/' drops 'example.com/credits' from every "
                   "workload's requests before admission, so Kueue admits pods that use it without counting it")
    assert found["example.com/credits"] == out_of_play("ClusterQueue 'solo-cq'", "example.com/credits", credits_why)
    assert found["nvidia.com/gpumem"].startswith(
        f"The Kueue Configuration in {WHERE} of the ConfigMap 'kueue-system/kueue-manager-config' takes quota out of "
        "play: ClusterQueues 'c12-inference-cq', 'c12-training-cq', 'solo-cq', 't0-cq', 't1-cq' and more quota "
        "'nvidia.com/gpumem', but ")


def test_a_replaced_gpu_is_found_at_the_transformations():
    """A Replace transformation of gpualloc into another resource: the finding's field is resources.transformations
    (kills the choice between the two fields)."""
    transformation = {"input": "nvidia.com/gpualloc", "strategy": "Replace", "outputs": {"example.com/credits": "1"}}
    assert [(f[2], f[3]) for f in findings(with_config(resources={"transformations": [transformation]}))] == [
        (f"{WHERE}.resources.transformations", "nvidia.com/gpualloc")]


SELECTOR = {"matchLabels": {"kueue-managed": "true"}}


def not_selected(namespace: str, labels: str) -> tuple[Any, ...]:
    return (POLICY, CONFIG_MAP, f"{WHERE}.managedJobsNamespaceSelector", SELECTOR,
            f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.managedJobsNamespaceSelector = "
            f"{{'matchLabels': {{'kueue-managed': 'true'}}}}: the tenant namespace '{namespace}' (labels {labels}) is "
            "not selected, and Kueue 0.19.2 ignores every job and pod of a namespace its managedJobsNamespaceSelector "
            "does not select, queue-name label or not (pkg/controller/jobframework/reconciler.go), and the chart's "
            f"webhooks skip it too: its jobs and pods run uncounted; select '{namespace}', e.g. with "
            "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, "
            "kueue-system]}]}, or label the namespace so the selector matches it.")


def test_an_unselected_tenant_namespace_is_one_whole_finding_with_its_labels():
    """managedJobsNamespaceSelector on a label neither tenant namespace has: one finding per namespace, with the labels
    the stack gives it (a Namespace object's, with the name label the apiserver adds) or its name label alone;
    kube-system and Kueue's own namespace, never managed by Kueue (`pkg/config/validation.go`), are skipped, and the
    tenant 'ml-team' after them is still judged."""
    manifests = with_config(managedJobsNamespaceSelector=SELECTOR)
    manifests["ns"] = {"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "c12-training", "labels": {"team": "ml"}}}
    for namespace in ("kube-system", "kueue-system", "ml-team"):
        manifests[f"lq-{namespace}"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                        "metadata": {"name": "lq", "namespace": namespace},
                                        "spec": {"clusterQueue": "c12-training-cq"}}
    assert findings(manifests) == [
        not_selected("c12-inference", "{'kubernetes.io/metadata.name': 'c12-inference'}"),
        not_selected("c12-training", "{'kubernetes.io/metadata.name': 'c12-training', 'team': 'ml'}"),
        not_selected("ml-team", "{'kubernetes.io/metadata.name': 'ml-team'}")]


def test_a_missing_framework_is_one_whole_finding_naming_at_most_three_users():
    """frameworks [batch/job, deployment, pod]: the TrainingRuntime needs trainer.kubeflow.org/trainjob. With four
    TrainingRuntimes the first three are named and "and more" (kills the mutants of the cut and the finding)."""
    manifests = with_config(integrations={"frameworks": ["batch/job", "deployment", "pod"]})
    for i in range(3):
        runtime = dict(manifests["runtime"], metadata={**manifests["runtime"]["metadata"], "name": f"r{i}"})
        manifests[f"runtime-{i}"] = runtime
    assert findings(manifests) == [(
        POLICY, CONFIG_MAP, f"{WHERE}.integrations.frameworks", ["batch/job", "deployment", "pod"],
        f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.integrations.frameworks = ['batch/job', "
        "'deployment', 'pod']: the stack runs TrainingRuntime 'c12-training/c12-checkpoint-runtime', TrainingRuntime "
        "'c12-training/r0', TrainingRuntime 'c12-training/r1' and more, and without the "
        "'trainer.kubeflow.org/trainjob' integration Kueue neither gates nor counts their pods; add "
        "'trainer.kubeflow.org/trainjob' to integrations.frameworks (the stack's kueue.integrations).")]


def test_a_gpu_no_queue_quotas_that_the_configuration_drops_is_one_whole_finding():
    """The training Job requests example.com/fpga, which no ClusterQueue quotas; excludeResourcePrefixes
    ['example.com/'] drops it, so Kueue admits it uncounted (without the entry Kueue would refuse it)."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["example.com/"]})
    manifests["job"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"example.com/fpga": "1"}}
    assert findings(manifests) == [(
        POLICY, CONFIG_MAP, f"{WHERE}.resources.excludeResourcePrefixes", "example.com/fpga",
        f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.resources.excludeResourcePrefixes = "
        "'example.com/fpga': Job 'c12-training/warmup' request 'example.com/fpga', which no ClusterQueue quotas, and "
        "resources.excludeResourcePrefixes entry 'example.com/' drops 'example.com/fpga' from every workload's "
        "requests before admission: those GPUs are used uncounted; remove the entry that drops or replaces "
        "'example.com/fpga' (Kueue then refuses a request no queue covers), or quota 'example.com/fpga' in the queues "
        "that run them.")]


def _without(manifests: dict[str, dict], name: str, resources: tuple[str, ...]) -> None:
    group = manifests[name]["spec"]["resourceGroups"][0]
    group["coveredResources"] = [r for r in group["coveredResources"] if r not in resources]
    group["flavors"][0]["resources"] = [r for r in group["flavors"][0]["resources"] if r["name"] not in resources]


@pytest.mark.parametrize("missing", [("memory",), ("cpu", "memory")])
def test_a_queue_that_leaves_cpu_or_memory_uncovered_is_one_whole_finding(missing):
    """Every pod requests cpu and memory; a ClusterQueue that does not cover them admits nothing (Kueue 0.19.2
    `pkg/scheduler/flavorassigner`: "resource ... unavailable in ClusterQueue")."""
    manifests = compliant()
    _without(manifests, "training-cq", missing)
    covered = [r for r in GPU_RESOURCES if r not in missing]
    shown = " and ".join(missing)
    quota = ", ".join(f"{r}: ..." for r in missing)
    assert findings(manifests) == [(
        POLICY, ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.resourceGroups", covered,
        f"The ClusterQueue 'c12-training-cq' has spec.resourceGroups = {covered!r}: every pod requests {shown}, and "
        "Kueue admits a workload only when its ClusterQueue covers each requested resource, so this ClusterQueue "
        f"would admit nothing; cover {shown} in the quota (e.g. nominalQuota {{{quota}}}), or exclude them from "
        f"Kueue's accounting with kueue.resources.excludeResourcePrefixes {list(missing)!r} (the manager "
        "Configuration's resources.excludeResourcePrefixes).")]


def test_uncovered_memory_excluded_by_the_configuration_passes():
    """memory not covered, but the stack's Configuration excludes the prefix 'mem': nothing is left uncovered."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["mem"]})
    _without(manifests, "training-cq", ("memory",))
    _without(manifests, "inference-cq", ("memory",))
    assert findings(manifests) == []


def test_the_option_standing_for_a_kueue_the_stack_does_not_install():
    """No Configuration in the stack, policy option excludeResourcePrefixes ['nvidia.com/gpuc']: each ClusterQueue
    quoting gpucores gets a finding at spec.resourceGroups (kills the mutants of the option's Counting and finding)."""
    manifests = compliant()
    manifests.pop("kueue-config")
    rule = ("The ClusterQueue '{q}' has spec.resourceGroups = 'nvidia.com/gpucores': the cluster's Kueue leaves "
            "'nvidia.com/gpucores' out: resources.excludeResourcePrefixes entry 'nvidia.com/gpuc' drops "
            "'nvidia.com/gpucores' from every workload's requests before admission, so Kueue admits pods that use it "
            "without counting it (policy option excludeResourcePrefixes); remove the prefix from "
            "kueue.resources.excludeResourcePrefixes, or stop quoting 'nvidia.com/gpucores'.")
    assert findings(manifests, {POLICY: {"excludeResourcePrefixes": ["nvidia.com/gpuc"]}}) == [
        (POLICY, ObjectRef("ClusterQueue", None, q), "spec.resourceGroups", "nvidia.com/gpucores", rule.format(q=q))
        for q in ("c12-inference-cq", "c12-training-cq")]


def test_the_option_is_not_applied_twice_when_the_stack_installs_kueue():
    """With a Configuration in the stack, the option is judged through it (part 2), not again per queue."""
    manifests = compliant()
    assert findings(manifests, {POLICY: {"excludeResourcePrefixes": ["nvidia.com/gpuc"]}}) == []


def _job(name: str, namespace: Any, labelled: bool, limits: dict | None = None) -> dict:
    """A batch/v1 Job (optionally on the training queue) whose container has `limits`."""
    labels = {"kueue.x-k8s.io/queue-name": "c12-training-lq"} if labelled else {}
    container: dict = {"name": "main", "image": "busybox"}
    if limits is not None:
        container["resources"] = {"limits": limits}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace,
                                                                   "labels": labels},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}}


def test_the_inference_queues_alone_need_the_deployment_integration():
    """No InferenceService or Deployment, but an inference ClusterQueue: Kueue's deployment integration is still
    required for what will run there, and the finding says so (kills the mutants of the inference names handed to
    the check and of the words)."""
    manifests = with_config(integrations={"frameworks": ["batch/job", "pod", "trainer.kubeflow.org/trainjob"]})
    manifests.pop("isvc")
    frameworks = ["batch/job", "pod", "trainer.kubeflow.org/trainjob"]
    assert findings(manifests) == [(
        POLICY, CONFIG_MAP, f"{WHERE}.integrations.frameworks", frameworks,
        f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.integrations.frameworks = {frameworks!r}: the "
        "stack runs Deployments on its inference ClusterQueues, and without the 'deployment' integration Kueue "
        "neither gates nor counts their pods; add 'deployment' to integrations.frameworks (the stack's "
        "kueue.integrations).")]


def test_only_the_stacks_tenant_workloads_need_an_integration():
    """Without batch/job in the frameworks: a Job in namespace 'ops' (no LocalQueue there) without the queue-name
    label is not run through Kueue, so nothing is reported; the same Job with the label is (kills the mutants of
    `required_frameworks`' namespace test)."""
    frameworks = ["deployment", "pod", "trainer.kubeflow.org/trainjob"]
    manifests = with_config(integrations={"frameworks": frameworks})
    manifests.pop("job")
    manifests["ops"] = _job("cleanup", "ops", labelled=False)
    assert findings(manifests) == []
    manifests["ops"] = _job("cleanup", "ops", labelled=True)
    assert [f[4] for f in findings(manifests)] == [
        f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.integrations.frameworks = {frameworks!r}: the "
        "stack runs Job 'ops/cleanup', and without the 'batch/job' integration Kueue neither gates nor counts their "
        "pods; add 'batch/job' to integrations.frameworks (the stack's kueue.integrations)."]


def test_a_workload_whose_namespace_is_unknown_is_assumed_queued():
    """A Job whose namespace is unknown at preview may be a tenant's (fail closed): without batch/job it is reported,
    beside the fail-closed finding for the namespace itself (kills `runs = True` made None or False)."""
    frameworks = ["deployment", "pod", "trainer.kubeflow.org/trainjob"]
    manifests = with_config(integrations={"frameworks": frameworks})
    manifests.pop("job")
    manifests["mystery"] = _job("mystery", UNKNOWN, labelled=False)
    assert [(f[2], f[3]) for f in findings(manifests)] == [(f"{WHERE}.integrations.frameworks", frameworks),
                                                           ("metadata.namespace", MISSING)]


def device_finding(users: str) -> tuple[Any, ...]:
    return (POLICY, CONFIG_MAP, f"{WHERE}.resources.excludeResourcePrefixes", "example.com/fpga",
            f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.resources.excludeResourcePrefixes = "
            f"'example.com/fpga': {users} request 'example.com/fpga', which no ClusterQueue quotas, and "
            "resources.excludeResourcePrefixes entry 'example.com/' drops 'example.com/fpga' from every workload's "
            "requests before admission: those GPUs are used uncounted; remove the entry that drops or replaces "
            "'example.com/fpga' (Kueue then refuses a request no queue covers), or quota 'example.com/fpga' in the "
            "queues that run them.")


def test_devices_are_counted_for_tenant_workloads_only_and_every_one_is_looked_at():
    """Listed first, a Job in 'ops' (no LocalQueue, no label) requesting the fpga: not the stack's tenant workload;
    then an unlabelled Job in the tenant namespace c12-training: it is (Kueue manages every job of a selected
    namespace). Kills the mutants of `requested_devices`' namespace test and its `continue` made `break`."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["example.com/"]})
    manifests = {"ops": _job("cleanup", "ops", labelled=False, limits={"example.com/fpga": "1"}), **manifests}
    assert findings(manifests) == []
    manifests["tenant"] = _job("tuner", "c12-training", labelled=False, limits={"example.com/fpga": "1"})
    assert findings(manifests) == [device_finding("Job 'c12-training/tuner'")]


def test_a_workload_of_unknown_namespace_does_not_stop_the_device_search():
    """A Job whose namespace is unknown at preview, listed first, is skipped here (the quantities rule fails closed on
    it); the tenant's Job after it is still judged (kills the `continue` made `break`)."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["example.com/"]})
    manifests = {"mystery": _job("mystery", UNKNOWN, labelled=True, limits={"example.com/fpga": "1"}), **manifests}
    manifests["job"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"example.com/fpga": "1"}}
    assert device_finding("Job 'c12-training/warmup'") in findings(manifests)


def test_a_standard_resource_no_queue_quotas_is_no_device():
    """ephemeral-storage (a standard resource, not an extended one) requested by the tenant's Job and excluded by
    the Configuration is not a GPU used uncounted (kills `is_extended_resource(...) and` made `or`)."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["ephemeral-storage"]})
    manifests["job"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"ephemeral-storage": "1Gi"}}
    assert findings(manifests) == []


def test_a_namespaced_kueue_object_other_than_a_local_queue_is_no_tenant():
    """A kueue.x-k8s.io Workload in namespace 'ops' does not make 'ops' a tenant namespace (only LocalQueues do),
    so a selector that misses 'ops' is not reported for it (kills `is_kueue(None)` in `tenant_namespaces`)."""
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                      "values": ["c12-inference", "c12-training"]}]}
    manifests = with_config(managedJobsNamespaceSelector=selector)
    manifests["wl"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "wl", "namespace": "ops"}, "spec": {"queueName": "lq", "podSets": []}}
    assert findings(manifests) == []


def test_a_local_queue_of_unknown_namespace_does_not_hide_the_others():
    """A LocalQueue whose namespace is unknown at preview, listed first, is left out of the tenant namespaces; the
    stack's two tenant namespaces are still judged against the selector (kills the `continue` made `break`)."""
    manifests = with_config(managedJobsNamespaceSelector=SELECTOR)
    manifests = {"lq": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                        "metadata": {"name": "lq", "namespace": UNKNOWN}, "spec": {"clusterQueue": "c12-training-cq"}},
                 **manifests}
    assert [f for f in findings(manifests) if f[0] == POLICY] == [
        not_selected("c12-inference", "{'kubernetes.io/metadata.name': 'c12-inference'}"),
        not_selected("c12-training", "{'kubernetes.io/metadata.name': 'c12-training'}")]


@pytest.mark.parametrize("jobs, users", [
    (3, "Job 'c12-training/j0', Job 'c12-training/j1', Job 'c12-training/j2'"),
    (4, "Job 'c12-training/j0', Job 'c12-training/j1', Job 'c12-training/j2' and more"),
])
def test_a_dropped_device_names_at_most_three_users(jobs, users):
    """Three tenant Jobs requesting the fpga are all named; a fourth makes "and more" (kills the mutants of the cut
    and of its bound)."""
    manifests = with_config(resources={"excludeResourcePrefixes": ["example.com/"]})
    manifests.pop("job")
    for i in range(jobs):
        manifests[f"j{i}"] = _job(f"j{i}", "c12-training", labelled=True, limits={"example.com/fpga": "1"})
    assert findings(manifests) == [device_finding(users)]


def test_a_device_replaced_with_nothing_is_found_at_the_transformations():
    """A Replace transformation of the fpga with no outputs (Kueue 0.19.2 `configuration_types.go`
    ResourceTransformation): the finding is at resources.transformations; a device listed before it that the
    Configuration keeps does not end the search (kills the field choice and the `continue` made `break`)."""
    manifests = with_config(resources={"transformations": [{"input": "example.com/fpga", "strategy": "Replace"}]})
    manifests["job"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"example.com/aaa": "1", "example.com/fpga": "1"}}
    assert findings(manifests) == [(
        POLICY, CONFIG_MAP, f"{WHERE}.resources.transformations", "example.com/fpga",
        f"The ConfigMap 'kueue-system/kueue-manager-config' has {WHERE}.resources.transformations = "
        "'example.com/fpga': Job 'c12-training/warmup' request 'example.com/fpga', which no ClusterQueue quotas, and "
        "resources.transformations replaces 'example.com/fpga' (strategy Replace) with nothing: those GPUs are used "
        "uncounted; remove the entry that drops or replaces 'example.com/fpga' (Kueue then refuses a request no queue "
        "covers), or quota 'example.com/fpga' in the queues that run them.")]


def test_the_out_of_play_finding_carries_its_rule_and_fix():
    """The finding's rule and fix clauses (the settings check prints them beside the key), not only its sentence
    (kills the mutants that drop either)."""
    found = [v for rule, v in run(stack(with_config(resources={"excludeResourcePrefixes": ["nvidia.com/gpum"]})), {})
             if rule.name == POLICY]
    assert [(v.rule, v.fix) for v in found] == [(
        "ClusterQueues 'c12-inference-cq', 'c12-training-cq' quota 'nvidia.com/gpumem', but "
        "resources.excludeResourcePrefixes entry 'nvidia.com/gpum' drops 'nvidia.com/gpumem' from every workload's "
        "requests before admission, so Kueue admits pods that use it without counting it: the quota is out of play",
        "remove the entry that drops or replaces 'nvidia.com/gpumem', or take 'nvidia.com/gpumem' out of these "
        "queues' quota")]


def test_a_queue_covering_cpu_and_memory_in_another_resource_group_covers_them():
    """Kueue 0.19.2 ClusterQueues may split their quota into resource groups (cpu and memory in one, the GPUs in
    another: `clusterqueue_types.go` ResourceGroup); what any group covers is covered (kills the mutant that keeps
    only the last group's resources)."""
    manifests = compliant()
    group = manifests["training-cq"]["spec"]["resourceGroups"][0]
    resources = group["flavors"][0]["resources"]
    manifests["training-cq"]["spec"]["resourceGroups"] = [
        {"coveredResources": ["cpu", "memory"],
         "flavors": [{"name": "c12-default", "resources": [r for r in resources if r["name"] in ("cpu", "memory")]}]},
        {"coveredResources": [r for r in group["coveredResources"] if r not in ("cpu", "memory")],
         "flavors": [{"name": "c12-gpu", "resources": [r for r in resources if r["name"] not in ("cpu", "memory")]}]}]
    assert findings(manifests) == []
