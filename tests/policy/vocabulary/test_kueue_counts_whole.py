"""vocabulary/kueue_counts.py `parse`: every problem a Configuration alone has, asserted whole (field, value, rule,
fix), and the namespace and default selector Kueue applies, written out by hand from Kueue v0.19.2
(`apis/config/v1beta2/defaults.go`: the managedJobsNamespaceSelector default excludes kube-system and Kueue's own
namespace; `pkg/config/validation.go`: what the manager refuses). Kills the vocabulary-kueue-counts survivors of
`parse` (the problems' fields, values, rules and fixes, the default namespace and selector)."""
from __future__ import annotations

from decimal import Decimal

import pytest

from kueue_cohorts.policy.rules.vocabulary.kueue_counts import Problem, parse, parse_feature_gates_flag

FRAMEWORKS_FIX = ("use one of ['batch/job', 'deployment', 'jobset.x-k8s.io/jobset', 'kubeflow.org/jaxjob', "
                  "'kubeflow.org/mpijob', 'kubeflow.org/paddlejob', 'kubeflow.org/pytorchjob', 'kubeflow.org/tfjob', "
                  "'kubeflow.org/xgboostjob', 'leaderworkerset.x-k8s.io/leaderworkerset', 'pod', "
                  "'ray.io/raycluster', 'ray.io/rayjob', 'ray.io/rayservice', 'sparkoperator.k8s.io/sparkapplication', "
                  "'statefulset', 'trainer.kubeflow.org/trainjob', 'workload.codeflare.dev/appwrapper']")
"""The 18 frameworks Kueue v0.19.2 registers (`jobframework.RegisterIntegration` of each package under
pkg/controller/jobs/), sorted."""


def _selector(namespace: str) -> dict:
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                  "values": ["kube-system", namespace]}]}


@pytest.mark.parametrize("config, default, namespace", [
    ({}, "kueue-system", "kueue-system"),
    ({}, "kueue-ops", "kueue-ops"),
    ({"namespace": "team-kueue"}, "kueue-system", "team-kueue"),
    ({"namespace": ""}, "kueue-system", "kueue-system"),  # empty: the service account's namespace
    ({"namespace": 5}, "kueue-ops", "kueue-ops"),
])
def test_the_namespace_and_the_default_selector(config, default, namespace):
    counting = parse(config, default) if default != "kueue-system" else parse(config)
    assert (counting.namespace, counting.selector, counting.problems) == (namespace, _selector(namespace), ())


def test_a_selector_written_is_kept():
    selector = {"matchLabels": {"kueue": "on"}}
    assert parse({"managedJobsNamespaceSelector": selector}).selector == selector


@pytest.mark.parametrize("config, problems", [
    ({"featureGates": ["A"]},
     [Problem("featureGates", ["A"], "featureGates must map gate names to true or false",
              "write featureGates as {GateName: true|false}")]),
    ({"integrations": {"frameworks": "batch/job"}},
     [Problem("integrations.frameworks", "batch/job", "integrations.frameworks must be a list",
              "list the framework names, e.g. [batch/job, pod, deployment]")]),
    ({"integrations": {"frameworks": ["batch/job", "kubeflow.org/notajob"]}},
     [Problem("integrations.frameworks", "kubeflow.org/notajob", "Kueue 0.19.2 has no integration framework "
              "'kubeflow.org/notajob' and its manager refuses to start (pkg/config/validation.go validateIntegrations)",
              FRAMEWORKS_FIX)]),
    ({"resources": ["cpu"]},
     [Problem("resources", ["cpu"], "resources must be a map", "write resources as a map")]),
    ({"resources": {"excludeResourcePrefixes": "nvidia.com/"}},
     [Problem("resources.excludeResourcePrefixes", "nvidia.com/",
              "resources.excludeResourcePrefixes must be a list of strings", "list the prefixes, e.g. [cpu, memory]")]),
    ({"resources": {"excludeResourcePrefixes": ["example.com/", ""]}},
     [Problem("resources.excludeResourcePrefixes", ["example.com/", ""], "the empty prefix excludes every resource, "
              "so Kueue counts nothing against any quota", "remove the empty entry")]),
    ({"resources": {"quotaCheckStrategy": "Ignore"}},
     [Problem("resources.quotaCheckStrategy", "Ignore", "Kueue 0.19.2 knows quotaCheckStrategy BlockUndeclared and "
              "IgnoreUndeclared only, and its manager refuses any other value",
              "remove quotaCheckStrategy (BlockUndeclared)")]),
    ({"resources": {"transformations": {"input": "nvidia.com/gpu"}}},
     [Problem("resources.transformations", {"input": "nvidia.com/gpu"}, "resources.transformations must be a list",
              "list the transformations")]),
    ({"resources": {"transformations": [{"strategy": "Replace"}, "nvidia.com/gpu"]}},
     [Problem("resources.transformations[0]", {"strategy": "Replace"}, "a transformation needs an input resource "
              "name", "set input to a resource name"),
      Problem("resources.transformations[1]", "nvidia.com/gpu", "a transformation needs an input resource name",
              "set input to a resource name")]),
    ({"resources": {"transformations": [{"input": "nvidia.com/gpu", "strategy": "Drop"}]}},
     [Problem("resources.transformations[0].strategy", "Drop", "a transformation's strategy is Retain or Replace, "
              "and the manager refuses any other value", "set strategy to Retain")]),
    ({"resources": {"transformations": [{"input": "nvidia.com/gpu"}, {"input": "nvidia.com/gpu"}]}},
     [Problem("resources.transformations[1].input", "nvidia.com/gpu", "two transformations of one input: the "
              "manager refuses to start", "merge them into one")]),
    ({"resources": {"transformations": [{"input": "nvidia.com/gpu", "outputs": ["x"]}]}},
     [Problem("resources.transformations[0].outputs", ["x"], "outputs must map resource names to quantities",
              "write outputs as {resource: quantity}")]),
])
def test_each_problem_whole(config, problems):
    assert list(parse(config).problems) == problems


def test_every_problem_of_one_configuration_is_listed():
    """Problems accumulate: a wrong featureGates type beside a bad framework and an empty prefix."""
    found = parse({"featureGates": "x", "integrations": {"frameworks": ["nope"]},
                   "resources": {"excludeResourcePrefixes": [""]}}).problems
    assert [p.field for p in found] == ["featureGates", "integrations.frameworks", "resources.excludeResourcePrefixes"]


def test_a_transformation_is_read_with_its_defaults():
    counting = parse({"resources": {"transformations": [
        {"input": "nvidia.com/mig-1g.5gb", "outputs": {"example.com/gpu-memory": "5Gi"}},
        {"input": "nvidia.com/gpu", "strategy": "Replace", "multiplyBy": "example.com/slices",
         "outputs": {"nvidia.com/gpu": "500m"}}]}})
    mig, gpu = counting.transformations["nvidia.com/mig-1g.5gb"], counting.transformations["nvidia.com/gpu"]
    assert (mig.strategy, mig.multiply_by, dict(mig.outputs)) == ("Retain", None,
                                                                 {"example.com/gpu-memory": Decimal(5 * 1024 ** 3)})
    assert (gpu.strategy, gpu.multiply_by, dict(gpu.outputs)) == ("Replace", "example.com/slices",
                                                                 {"nvidia.com/gpu": Decimal("0.5")})
    assert counting.problems == ()


# --- gate_problems: each kind whole (Kueue v0.19.2 pkg/features/kube_features.go: HierarchicalCohorts GA and locked
# to true since 0.17, MultiKueueAllowInsecureKubeconfigs deprecated and locked to false in 0.19) ------------------

@pytest.mark.parametrize("gates, problems", [
    ({"NoSuchGate": True, "PartialAdmission": False},
     [Problem("featureGates", {"NoSuchGate": True}, "Kueue 0.19.2 knows no feature gate 'NoSuchGate' and its manager "
              "refuses to start (unrecognized feature gate), so nothing is admitted or counted",
              "remove 'NoSuchGate' or correct its name (the gates are listed in pkg/features/kube_features.go)")]),
    ({"NoSuchGate": True, "Other": False},  # every unknown gate, not the first only
     [Problem("featureGates", {"NoSuchGate": True}, "Kueue 0.19.2 knows no feature gate 'NoSuchGate' and its manager "
              "refuses to start (unrecognized feature gate), so nothing is admitted or counted",
              "remove 'NoSuchGate' or correct its name (the gates are listed in pkg/features/kube_features.go)"),
      Problem("featureGates", {"Other": False}, "Kueue 0.19.2 knows no feature gate 'Other' and its manager refuses "
              "to start (unrecognized feature gate), so nothing is admitted or counted",
              "remove 'Other' or correct its name (the gates are listed in pkg/features/kube_features.go)")]),
    ({"PartialAdmission": "yes", "FlavorFungibility": 1},
     [Problem("featureGates", {"PartialAdmission": "yes"}, "feature gate PartialAdmission must be true or false, and "
              "the manager refuses to start on anything else", "set PartialAdmission to true or false"),
      Problem("featureGates", {"FlavorFungibility": 1}, "feature gate FlavorFungibility must be true or false, and the "
              "manager refuses to start on anything else", "set FlavorFungibility to true or false")]),
    ({"HierarchicalCohorts": False, "MultiKueueAllowInsecureKubeconfigs": True},
     [Problem("featureGates", {"HierarchicalCohorts": False}, "feature gate HierarchicalCohorts is locked to true in "
              "Kueue 0.19.2 and the manager refuses to start when it is set otherwise", "remove HierarchicalCohorts"),
      Problem("featureGates", {"MultiKueueAllowInsecureKubeconfigs": True}, "feature gate "
              "MultiKueueAllowInsecureKubeconfigs is locked to false in Kueue 0.19.2 and the manager refuses to start "
              "when it is set otherwise", "remove MultiKueueAllowInsecureKubeconfigs")]),
    ({"HierarchicalCohorts": True, "DisableWaitForPodsReady": True},
     [Problem("featureGates", {"DisableWaitForPodsReady": True}, "feature gate DisableWaitForPodsReady=true switches "
              "off a protection the stack relies on: it switches waitForPodsReady off, so a workload admitted with "
              "pods that never start keeps its quota", "remove DisableWaitForPodsReady (default false)")]),
])
def test_gate_problems_whole(gates, problems):
    assert list(parse({"featureGates": gates}).problems) == problems


# --- what a Counting leaves uncounted: each clause whole ---------------------------------------------------------

GPU = "nvidia.com/gpu"


def _counting(*transformations: dict, excluded: list[str] | None = None):
    resources: dict = {"transformations": list(transformations)}
    if excluded is not None:
        resources["excludeResourcePrefixes"] = excluded
    counting = parse({"resources": resources})
    assert counting.problems == ()
    return counting


def test_an_excluded_prefix_drops_the_request():
    counting = _counting(excluded=["example.com/", "nvidia.com/"])
    assert counting.dropped(GPU) == ("resources.excludeResourcePrefixes entry 'nvidia.com/' drops 'nvidia.com/gpu' "
                                     "from every workload's requests before admission")
    assert counting.uncounted(GPU) == ("resources.excludeResourcePrefixes entry 'nvidia.com/' drops "
                                       "'nvidia.com/gpu' from every workload's requests before admission, so Kueue "
                                       "admits pods that use it without counting it")
    assert counting.dropped("cpu") is None and counting.uncounted("cpu") is None


@pytest.mark.parametrize("outputs, dropped, uncounted", [
    ({}, "resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with nothing",
     "resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with {nothing}, so Kueue counts none of "
     "it per GPU a pod uses"),
    ({GPU: "0"}, "resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with nothing",
     "resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with {nvidia.com/gpu: 0}, so Kueue "
     "counts none of it per GPU a pod uses"),
    ({GPU: "500m", "example.com/gpu-memory": "0"}, None,
     "resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with {nvidia.com/gpu: 0.5, "
     "example.com/gpu-memory: 0}, so Kueue counts 0.5 of it per GPU a pod uses"),
    ({"example.com/gpu-memory": "40Gi"}, None,
     "resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with {example.com/gpu-memory: "
     "42949672960}, so Kueue counts none of it per GPU a pod uses"),
    ({GPU: "1"}, None, None),
])
def test_a_replace_transformation_counts_what_it_outputs(outputs, dropped, uncounted):
    counting = _counting({"input": GPU, "strategy": "Replace", "outputs": outputs})
    assert (counting.dropped(GPU), counting.uncounted(GPU)) == (dropped, uncounted)


def test_a_negative_output_of_another_input_undercounts_a_replaced_resource():
    counting = _counting({"input": GPU, "strategy": "Replace", "outputs": {GPU: "1"}},
                         {"input": "example.com/slice", "outputs": {GPU: "-1", "cpu": "1"}},
                         {"input": "example.com/other", "outputs": {GPU: "2"}})
    assert counting.uncounted(GPU) == ("resources.transformations outputs a negative -1 of 'nvidia.com/gpu' per "
                                       "'example.com/slice' while 'nvidia.com/gpu' itself is replaced, so a pod "
                                       "requesting both is counted for fewer than it uses")
    positive = _counting({"input": GPU, "strategy": "Replace", "outputs": {GPU: "1"}},
                         {"input": "example.com/other", "outputs": {GPU: "0", "cpu": "1"}})
    assert positive.uncounted(GPU) is None


def test_retain_keeps_the_request_and_multiply_by_scales_it():
    assert _counting({"input": GPU, "outputs": {GPU: "0"}}).uncounted(GPU) is None
    scaled = _counting({"input": GPU, "strategy": "Replace", "multiplyBy": "example.com/slices", "outputs": {GPU: "1"}})
    assert scaled.uncounted(GPU) == ("resources.transformations replaces 'nvidia.com/gpu' (strategy Replace) with "
                                     "itself multiplied by the pod's request of 'example.com/slices', so a request "
                                     "below 1 of that undercounts it")


@pytest.mark.parametrize("frameworks", [5, {"batch/job": True}, "pod"])
def test_frameworks_that_are_no_list_are_a_problem_not_a_crash(frameworks):
    """A string, a map or a number is no list of frameworks (kills `_is_list`'s `or`, which iterated a number)."""
    assert list(parse({"integrations": {"frameworks": frameworks}}).problems) == [Problem(
        "integrations.frameworks", frameworks, "integrations.frameworks must be a list",
        "list the framework names, e.g. [batch/job, pod, deployment]")]


@pytest.mark.parametrize("text, gates, problems", [
    ("A=true,,B=false", {"A": True, "B": False}, []),  # an empty item is skipped, the rest still read
    ("A=true,B", {"A": True}, ["missing bool value for 'B'"]),
    (" A = t ,B=F,", {"A": True, "B": False}, []),
])
def test_the_flag_value_as_featuregate_set_reads_it(text, gates, problems):
    """component-base featuregate.Set: comma-separated pairs, empty ones skipped, names and values trimmed, values
    read by strconv.ParseBool."""
    assert parse_feature_gates_flag(text) == (gates, problems)


IGNORE_RULE = ("with quotaCheckStrategy IgnoreUndeclared Kueue skips every requested resource the ClusterQueue does "
               "not cover, so a GPU request on a queue without GPU quota is admitted uncounted")


@pytest.mark.parametrize("config, ignores, problems", [
    # QuotaCheckStrategy is Beta and on by default in v0.19.2 (kube_features.go)
    ({"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}, True,
     [Problem("resources.quotaCheckStrategy", "IgnoreUndeclared", IGNORE_RULE,
              "remove quotaCheckStrategy, or set it to BlockUndeclared")]),
    ({"featureGates": {"QuotaCheckStrategy": False}, "resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}, False,
     []),
    ({"resources": {"quotaCheckStrategy": "BlockUndeclared"}}, False, []),
    ({}, False, []),
])
def test_ignore_undeclared_is_read_with_its_gate(config, ignores, problems):
    counting = parse(config)
    assert counting.ignores_undeclared is ignores and list(counting.problems) == problems


def test_each_transformation_is_read_whatever_the_one_before_it_was():
    """A bad transformation is reported and skipped; the ones after it are still read (kills `continue` -> `break`
    in each of parse's refusals), and one with a bad output factor is not read at all."""
    counting = parse({"resources": {"transformations": [
        {"input": "a", "strategy": "Drop"}, {"input": "b"}, {"input": "b"}, {"input": "c", "outputs": ["x"]},
        {"input": "d", "outputs": {"e": "x", "f": "1"}}, {"input": "g", "outputs": {"h": "2"}}]}})
    assert sorted(counting.transformations) == ["b", "g"]
    assert [p.field for p in counting.problems] == [
        "resources.transformations[0].strategy", "resources.transformations[2].input",
        "resources.transformations[3].outputs", "resources.transformations[4].outputs"]
    assert counting.problems[3] == Problem(
        "resources.transformations[4].outputs", {"e": "x"}, "an output factor must be a quantity (it is not a "
        "Kubernetes quantity)", "write a quantity such as 1 or 500m")


def test_another_transformation_without_an_output_of_the_resource_lowers_nothing():
    counting = _counting({"input": GPU, "strategy": "Replace", "outputs": {GPU: "1"}},
                         {"input": "example.com/other", "outputs": {"cpu": "1"}})
    assert counting.uncounted(GPU) is None
