"""kueue-manager-config (promise 2): what the policy-kueue-manager-config mutation run found no test pinning down.

Each test asserts whole findings (policy, field, value, rule, fix and the sentence the pack prints), written out by
hand. Upstream facts: Kueue v0.19.2 `pkg/config/validation.go` (what the manager refuses to start with),
`apis/config/v1beta2/defaults.go`, `charts/kueue/templates/_helpers.tpl` (the chart renders
`controllerManager.featureGates` as `--feature-gates=` + printf "%s=%t" .name .enabled per entry), component-base
`featuregate.Set` and Go's `flag` package, which v0.19.2 `cmd/kueue/main.go` parses its flags with (the manager's
flags: `--flag value` takes the next argv word, a flag ending the argv fails with "flag needs an argument");
Kubernetes v1.36 runs a container's `command` then its `args` as one argv."""
from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from kueue_cohorts.policy.rules.kueue_manager_config import check_kueue_manager_config
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, Violation
from tests.policy.fixtures import UNKNOWN, kube
from tests.policy.rules.test_cluster_queue_covers_pod_resources import _carrier, _config

POLICY = "kueue-manager-config"
KEY = "controller_manager_config.yaml"
CM = "The Kueue Configuration in data['controller_manager_config.yaml'] of the ConfigMap 'kueue-system/kueue-config'"
UNSAFE_RULE = ("feature gate DisableWaitForPodsReady=true switches off a protection the stack relies on: it switches "
               "waitForPodsReady off, so a workload admitted with pods that never start keeps its quota")
UNSAFE_FIX = "remove DisableWaitForPodsReady (default false)"


def whole(found: list[Violation]) -> list[tuple[Any, ...]]:
    """Every part of each finding, the value included (Violation's equality leaves the value out)."""
    return [(v.policy, v.field, v.value, v.rule, v.fix, v.message) for v in found]


def _map(*texts: str, name: str = "kueue-config") -> Any:
    """A ConfigMap of kueue-system holding `texts` under `a.yaml`, `b.yaml`, ..., the last under the chart's key."""
    keys = [f"{chr(ord('a') + i)}.yaml" for i in range(len(texts) - 1)] + [KEY]
    return kube(name, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "kueue-system"},
                       "data": dict(zip(keys, texts, strict=True))})


def _judge(config: dict, namespace: str | None = None) -> list[Violation]:
    obj = _map(yaml.safe_dump(config))
    return check_kueue_manager_config(obj) if namespace is None else check_kueue_manager_config(obj, namespace)


# --- manageJobsWithoutQueueName and its selector ------------------------------------------------------------------

def test_manage_all_jobs_without_selector_is_one_whole_finding_naming_the_configurations_namespace():
    """Kills check_configuration's `namespace`/`protected` mutants (4-11) and the finding's field, value, rule and fix
    (34-52): the namespace the fix leaves out is the Configuration's own (`namespace: kueue-ops`)."""
    found = _judge(_config(namespace="kueue-ops", manageJobsWithoutQueueName=True))
    assert whole(found) == [(
        POLICY, f"data['{KEY}'].managedJobsNamespaceSelector", MISSING,
        "with manageJobsWithoutQueueName true, Kueue suspends every job it selects, so a managedJobsNamespaceSelector "
        "must exclude kube-system and Kueue's namespace",
        "add managedJobsNamespaceSelector {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, "
        "values: [kube-system, kueue-ops]}]}, or set manageJobsWithoutQueueName to false",
        f"{CM} sets manageJobsWithoutQueueName: true without a managedJobsNamespaceSelector, so Kueue would suspend "
        "jobs in every namespace; add managedJobsNamespaceSelector with matchExpressions [{key: "
        "kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-ops]}].")]


@pytest.mark.parametrize("namespace", ["kueue-system", "kueue-ops"])
def test_without_a_namespace_the_configuration_is_kueues_namespace_from_the_policy_config(namespace):
    """Kills check_kueue_manager_config's default namespace (1, 2) and `check_configuration(config, None)` (53): a
    Configuration without `namespace` runs in Kueue's namespace (defaults.go: the service account's), which the
    policy config names (`kueueNamespace`, default kueue-system)."""
    config = _config(manageJobsWithoutQueueName=True)
    del config["namespace"]
    found = _judge(config) if namespace == "kueue-system" else _judge(config, namespace)
    assert [v.fix for v in found] == [
        "add managedJobsNamespaceSelector {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, "
        f"values: [kube-system, {namespace}]}}]}}, or set manageJobsWithoutQueueName to false"]


def test_a_selector_that_is_no_map_is_no_selector():
    """Kills `selector is MISSING and not is_map(selector)` (29): a selector written as a string selects nothing
    Kueue can read, so the rule asks for one."""
    found = _judge(_config(manageJobsWithoutQueueName=True, managedJobsNamespaceSelector="kube-system"))
    assert [(v.field, v.value) for v in found] == [(f"data['{KEY}'].managedJobsNamespaceSelector", "kube-system")]
    assert found[0].rule.endswith("so a managedJobsNamespaceSelector must exclude kube-system and Kueue's namespace")


def test_a_selector_that_selects_both_system_namespaces_names_both():
    """Kills the " and " of the names (65, 66) and the finding's field, value, rule and fix (69-81): an opt-out
    selector that leaves only `default` out selects kube-system and kueue-system (matched on
    kubernetes.io/metadata.name, which every namespace carries since Kubernetes v1.22)."""
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                      "values": ["default"]}]}
    found = _judge(_config(manageJobsWithoutQueueName=True, managedJobsNamespaceSelector=selector))
    assert whole(found) == [(
        POLICY, f"data['{KEY}'].managedJobsNamespaceSelector", selector,
        "with manageJobsWithoutQueueName true, Kueue suspends every job it selects, and this selector selects "
        "'kube-system' and 'kueue-system'",
        "exclude them, e.g. {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: "
        "[kube-system, kueue-system]}]}, or use an opt-in selector",
        f"{CM} sets manageJobsWithoutQueueName: true with a managedJobsNamespaceSelector that selects 'kube-system' "
        "and 'kueue-system', so Kueue would suspend system pods; exclude them, e.g. {key: kubernetes.io/metadata.name, "
        "operator: NotIn, values: [kube-system, kueue-system]}.")]


# --- waitForPodsReady -----------------------------------------------------------------------------------------------

def test_missing_wait_for_pods_ready_is_one_whole_finding():
    """Kills the finding's field, value, rule and fix (check_configuration 112-130)."""
    config = _config()
    del config["waitForPodsReady"]
    assert whole(_judge(config)) == [(
        POLICY, f"data['{KEY}'].waitForPodsReady", MISSING,
        "an admitted workload whose pods never start must give its quota back: waitForPodsReady is required",
        "add waitForPodsReady with a timeout (e.g. timeout: 10m)",
        f"{CM} has no waitForPodsReady; add waitForPodsReady with a timeout (e.g. timeout: 10m) so that an admitted "
        "workload whose pods never start gives its quota back.")]


def test_wait_for_pods_ready_that_is_no_map_is_no_wait_for_pods_ready():
    """Kills `wait is MISSING and not is_map(wait)` (107): `waitForPodsReady: 10m` sets no timeout."""
    found = _judge(_config(waitForPodsReady="10m"))
    assert [(v.field, v.value, v.fix) for v in found] == [
        (f"data['{KEY}'].waitForPodsReady", "10m", "add waitForPodsReady with a timeout (e.g. timeout: 10m)")]


def test_v1beta1_without_enable_is_one_whole_finding():
    """Kills the v1beta1 `enable` finding's field, value, rule and fix (149-172)."""
    found = _judge(_config(apiVersion="config.kueue.x-k8s.io/v1beta1", waitForPodsReady={"timeout": "10m",
                                                                                          "enable": False}))
    assert whole(found) == [(
        POLICY, f"data['{KEY}'].waitForPodsReady.enable", False, "config v1beta1 needs waitForPodsReady.enable: true",
        "enable it", f"{CM} does not set waitForPodsReady.enable: true (config v1beta1); enable it.")]


def test_v1beta1_with_enable_true_passes():
    """Kills `get(None/…, "enable")` and `is not False` (140-147): config v1beta1 with waitForPodsReady.enable: true
    and a timeout is what Kueue's v1beta1 Configuration asks for."""
    assert _judge(_config(apiVersion="config.kueue.x-k8s.io/v1beta1",
                          waitForPodsReady={"timeout": "10m", "enable": True})) == []


def test_missing_timeout_is_one_whole_finding():
    """Kills the timeout finding's field, value, rule and fix (check_configuration 193-208) and duration_problem's
    "is missing" (2, 3)."""
    found = _judge(_config(waitForPodsReady={"recoveryTimeout": "5m"}))
    assert whole(found) == [(
        POLICY, f"data['{KEY}'].waitForPodsReady.timeout", MISSING, "waitForPodsReady.timeout: is missing",
        "set a positive Go duration such as 10m",
        f"{CM} has waitForPodsReady.timeout missing; set a positive duration such as 10m.")]


def test_a_negative_recovery_timeout_is_one_whole_finding():
    """Kills the recoveryTimeout sentence (wait_for_pods_ready_problems 25, 39, 40)."""
    found = _judge(_config(waitForPodsReady={"timeout": "10m", "recoveryTimeout": "-1m"}))
    assert [v.message for v in found] == [
        f"{CM} has waitForPodsReady.recoveryTimeout '-1m' is negative, so Kueue's manager would not start; set a "
        "positive duration such as 10m, 0s to switch it off, or leave it out (it then equals timeout)."]


def test_an_unknown_requeuing_timestamp_is_one_whole_finding():
    """Kills the timestamp sentence (74, 88-90)."""
    found = _judge(_config(waitForPodsReady={"timeout": "10m", "requeuingStrategy": {"timestamp": "Now"}}))
    assert whole(found) == [(
        POLICY, f"data['{KEY}'].waitForPodsReady.requeuingStrategy.timestamp", "Now",
        "waitForPodsReady.requeuingStrategy.timestamp 'Now' is not Creation or Eviction, and Kueue's manager refuses "
        "to start with it", "set Eviction (the default) or Creation",
        f"{CM} has waitForPodsReady.requeuingStrategy.timestamp 'Now', so Kueue's manager would not start; set "
        "Eviction (the default) or Creation.")]


@pytest.mark.parametrize("strategy", [
    {"timestamp": "Eviction"},
    {"backoffLimitCount": 2147483647, "backoffBaseSeconds": 62, "backoffMaxSeconds": 3600},
])
def test_what_validate_wait_for_pods_ready_accepts_passes(strategy):
    """Kills "Eviction" misspelt (66, 68) and the int32 bound moved (115 `<`, 117 `2 * 31`, 120 `- 2`): Eviction is
    the default timestamp, and int32's maximum 2147483647 is a count Kueue decodes and accepts."""
    assert _judge(_config(waitForPodsReady={"timeout": "10m", "requeuingStrategy": strategy})) == []


@pytest.mark.parametrize(("value", "what"), [(-1, "is negative"), (2**31, "is not a whole number within int32"),
                                             (1.5, "is not a whole number within int32")])
def test_a_backoff_the_manager_refuses_after_a_valid_one_is_one_whole_finding(value, what):
    """Kills `continue` -> `break` (121: the valid backoffLimitCount before it) and the words of `what` and the
    sentence (122-131, 137-148)."""
    found = _judge(_config(waitForPodsReady={"timeout": "10m", "requeuingStrategy": {
        "backoffLimitCount": 3, "backoffBaseSeconds": value}}))
    assert whole(found) == [(
        POLICY, f"data['{KEY}'].waitForPodsReady.requeuingStrategy.backoffBaseSeconds", value,
        f"waitForPodsReady.requeuingStrategy.backoffBaseSeconds {value!r} {what}, and Kueue's manager refuses to start "
        "with it", "set a whole number from 0 to 2147483647",
        f"{CM} has waitForPodsReady.requeuingStrategy.backoffBaseSeconds {value!r}, which {what}, so Kueue's manager "
        "would not start; set a whole number from 0 to 2147483647.")]


def test_a_counting_problem_of_the_model_is_one_whole_finding():
    """Kills _from_model's value, fix and sentence (2, 4, 11): quotaCheckStrategy IgnoreUndeclared (Kueue v0.19.2
    `apis/config/v1beta2/configuration_types.go`) admits workloads whose resources no quota declares."""
    [v] = _judge(_config(resources={"quotaCheckStrategy": "IgnoreUndeclared"}))
    assert (v.policy, v.field, v.value) == (POLICY, f"data['{KEY}'].resources.quotaCheckStrategy", "IgnoreUndeclared")
    rule = ("with quotaCheckStrategy IgnoreUndeclared Kueue skips every requested resource the ClusterQueue does not "
            "cover, so a GPU request on a queue without GPU quota is admitted uncounted")
    fix = "remove quotaCheckStrategy, or set it to BlockUndeclared"
    assert (v.rule, v.fix) == (rule, fix)
    assert v.message == f"{CM} sets resources.quotaCheckStrategy = 'IgnoreUndeclared': {rule}; {fix}."


# --- where a Configuration is read ------------------------------------------------------------------------------------

def test_yaml_that_does_not_parse_is_one_whole_finding_and_the_next_configuration_is_still_judged():
    """Kills the bad-YAML finding (check_kueue_manager_config 9-29) and its `continue` -> `break` (30)."""
    broken = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration: x\n"
    config = _config()
    del config["waitForPodsReady"]
    found = check_kueue_manager_config(_map(broken, yaml.safe_dump(config)))
    assert whole(found)[0] == (
        POLICY, "data['a.yaml']", MISSING, "a Kueue Configuration must be valid YAML", "fix the YAML",
        "The ConfigMap 'kueue-system/kueue-config' has a Kueue Configuration in data['a.yaml'] that is not valid YAML "
        "(mapping values are not allowed here\n  in \"<unicode string>\", line 2, column 20:\n    kind: Configuration: "
        "x\n                       ^); fix it.")
    assert [v.field for v in found[1:]] == [f"data['{KEY}'].waitForPodsReady"]


@pytest.mark.parametrize("text", [
    "# see config.kueue.x-k8s.io/v1beta2\n- a list, not a Configuration\n",
    "kind: Runbook\nnote: the manager reads config.kueue.x-k8s.io/v1beta2\n",
])
def test_a_config_map_value_that_only_mentions_the_group_is_skipped_and_the_next_is_judged(text):
    """Kills `not is_map(config) and (...)` (31), `obj.kind != / misspelt "ConfigMap"` (35-38) and `continue` ->
    `break` (51): a ConfigMap value is a Configuration only when it is a map whose apiVersion is of
    config.kueue.x-k8s.io; the one after it is still read."""
    config = _config()
    del config["waitForPodsReady"]
    found = check_kueue_manager_config(_map(text, yaml.safe_dump(config)))
    assert [v.field for v in found] == [f"data['{KEY}'].waitForPodsReady"]


# --- the manager's --feature-gates flag ------------------------------------------------------------------------------

def _manager(*containers: dict, name: Any = "kueue-controller-manager", kind: str = "Deployment") -> Any:
    return kube("manager", {"apiVersion": "apps/v1", "kind": kind,
                            "metadata": {"name": name, "namespace": "kueue-system"},
                            "spec": {"template": {"spec": {"containers": list(containers)}}}})


def _container(args: list, command: Any = None, image: Any = "registry.k8s.io/kueue/kueue:v0.19.2") -> dict:
    container = {"name": "manager", "image": image, "args": args}
    if command is not None:
        container["command"] = command
    return container


DEPLOYMENT = "The Deployment 'kueue-system/kueue-controller-manager' runs Kueue's manager with"


def test_an_unsafe_gate_in_the_flag_is_one_whole_finding():
    """Kills the flag finding's policy, value, fix and sentence (check_kueue_manager_config 93-106)."""
    found = check_kueue_manager_config(_manager(_container(["--feature-gates=DisableWaitForPodsReady=true"])))
    assert whole(found) == [(
        POLICY, "spec.template.spec.containers[0].args[0]", {"DisableWaitForPodsReady": True}, UNSAFE_RULE,
        UNSAFE_FIX, f"{DEPLOYMENT} spec.template.spec.containers[0].args[0] = 'DisableWaitForPodsReady=true': "
        f"{UNSAFE_RULE}; {UNSAFE_FIX}.")]


def test_a_gate_without_a_value_is_one_whole_finding():
    """Kills the malformed-piece finding (75-85): component-base featuregate.Set refuses `Name` without `=value`."""
    found = check_kueue_manager_config(_manager(_container(["--feature-gates=PartialAdmission"])))
    assert whole(found) == [(
        POLICY, "spec.template.spec.containers[0].args[0]", "PartialAdmission",
        "the manager refuses to start: missing bool value for 'PartialAdmission'",
        "write each gate as Name=true or Name=false",
        f"{DEPLOYMENT} spec.template.spec.containers[0].args[0] = 'PartialAdmission': the manager refuses to start: "
        "missing bool value for 'PartialAdmission'; write each gate as Name=true or Name=false.")]


@pytest.mark.parametrize(("containers", "field"), [
    # the flag in `command` (feature_gate_flags 19, 20)
    ([_container([], command=["/manager", "--feature-gates=DisableWaitForPodsReady=true"])],
     "spec.template.spec.containers[0].command[1]"),
    # `--feature-gates value`: the word after it, not before (57)
    ([_container(["--zap-log-level=2", "--feature-gates", "DisableWaitForPodsReady=true"])],
     "spec.template.spec.containers[0].args[1]"),
    # command and args are one argv: the flag ends `command`, its value opens `args`
    ([_container(["DisableWaitForPodsReady=true"], command=["/manager", "--feature-gates"])],
     "spec.template.spec.containers[0].command[1]"),
    # a manager named kueue whose image is a mirror's (is_kueue_manager 14, 15)
    ([_container(["--feature-gates=DisableWaitForPodsReady=true"], image="mirror.example.com/manager:v0.19.2")],
     "spec.template.spec.containers[0].args[0]"),
    # a sidecar whose image is unknown at preview before the manager (is_kueue_manager 49)
    ([_container([], image=UNKNOWN),
      _container(["--feature-gates=DisableWaitForPodsReady=true"])], "spec.template.spec.containers[1].args[0]"),
])
def test_the_flag_is_read_wherever_the_managers_argv_holds_it(containers, field):
    """The unsafe gate is found at its field wherever the manager's argv (command then args, Go's flag package's
    rules) holds it, in a Deployment named kueue or running a kueue image."""
    name = "controller" if len(containers) == 2 else "kueue-controller-manager"
    found = check_kueue_manager_config(_manager(*containers, name=name))
    assert [(v.field, v.value, v.rule) for v in found] == [(field, {"DisableWaitForPodsReady": True}, UNSAFE_RULE)]


@pytest.mark.parametrize("args", [["--feature-gates"], ["--zap-log-level=2", "--feature-gates"]])
def test_a_feature_gates_flag_that_ends_the_argv_stops_the_manager(args):
    """Kills `at - 1 < len(words)` and `<=` (54, 56), which read past the argv's end: Go's flag package refuses a
    `--flag` with no word after it ("flag needs an argument"), so the manager does not start. (Before, the rule said
    nothing.)"""
    found = check_kueue_manager_config(_manager(_container(args)))
    field = f"spec.template.spec.containers[0].args[{len(args) - 1}]"
    assert whole(found) == [(
        POLICY, field, "--feature-gates", "the manager refuses to start: flag needs an argument: --feature-gates",
        "give --feature-gates its gates (--feature-gates=Name=true,...) or remove it",
        f"{DEPLOYMENT} {field} = '--feature-gates' and no value after it: the manager refuses to start (flag needs "
        "an argument); give --feature-gates its gates (--feature-gates=Name=true,...) or remove it.")]


def test_quotes_inside_one_argv_word_are_the_flags_own_characters():
    """Kills `shlex.split` of every argument (feature_gate_flags 34): without a shell, `--feature-gates="X=true"` is
    one argv word whose value is wrapped in quotes, so component-base reads the value `true"`, which
    strconv.ParseBool refuses (the manager does not start)."""
    found = check_kueue_manager_config(_manager(_container(['--feature-gates="DisableWaitForPodsReady=true"'])))
    assert [(v.field, v.value, v.rule) for v in found] == [(
        "spec.template.spec.containers[0].args[0]", '"DisableWaitForPodsReady=true"',
        "the manager refuses to start: invalid value of \"DisableWaitForPodsReady: 'true\"', not a boolean")]


def test_an_argument_a_shell_cannot_split_is_read_as_one_word():
    """Kills `pieces = None` (38): an argument with a space and an unclosed quote is one argv word; its
    `--feature-gates=` value runs to its end, and `true --note='x` is no boolean (strconv.ParseBool)."""
    found = check_kueue_manager_config(_manager(_container(["--feature-gates=DisableWaitForPodsReady=true --note='x"])))
    assert [(v.field, v.value) for v in found] == [("spec.template.spec.containers[0].args[0]",
                                                     "DisableWaitForPodsReady=true --note='x")]
    assert found[0].rule == ("the manager refuses to start: invalid value of DisableWaitForPodsReady: "
                             "\"true --note='x\", not a boolean")


def test_only_deployments_are_read_as_kueues_manager():
    """Kills `return True` for another kind (is_kueue_manager 11): the chart runs the manager as a Deployment; a
    StatefulSet of the same name is another program's."""
    assert check_kueue_manager_config(_manager(_container(["--feature-gates=Bogus=true"]), kind="StatefulSet")) == []


def test_a_deployment_of_unknown_containers_and_another_name_is_no_finding():
    """Kills `return True` when the containers are unknown (is_kueue_manager 35): no evidence it runs Kueue."""
    obj = kube("web", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                       "spec": {"template": {"spec": {"containers": UNKNOWN}}}})
    assert check_kueue_manager_config(obj) == []


# --- the chart's controllerManager.featureGates -----------------------------------------------------------------------

def _chart(gates: Any, kind: str = "Chart", group_version: str = "helm.sh/v4", name: str = "kueue",
           chart: str = "oci://registry.k8s.io/kueue/charts/kueue") -> Any:
    return kube(name, {"apiVersion": group_version, "kind": kind, "metadata": {"name": name}, "chart": chart,
                       "values": {"controllerManager": {"featureGates": gates}}})


CHART_WHERE = "values.controllerManager.featureGates"


@pytest.mark.parametrize(("kind", "group_version", "describe"), [("Chart", "helm.sh/v4", "Chart 'kueue'"),
                                                                  ("Release", "helm.sh/v3", "Release 'kueue'")])
def test_an_unsafe_chart_gate_is_one_whole_finding(kind, group_version, describe):
    """Kills the chart-gate branch (chart_feature_gates 10-12, 47, 48; check_kueue_manager_config 109-152): a Helm
    Chart (v4) or Release (v3) of the kueue chart passes the gate to the manager's --feature-gates."""
    found = check_kueue_manager_config(_chart([{"name": "PartialAdmission", "enabled": True},
                                               {"name": "DisableWaitForPodsReady", "enabled": True}],
                                              kind=kind, group_version=group_version))
    assert whole(found) == [(
        POLICY, CHART_WHERE, {"DisableWaitForPodsReady": True}, UNSAFE_RULE, UNSAFE_FIX,
        f"The {describe} sets {CHART_WHERE} {{'DisableWaitForPodsReady': True}} (the manager's --feature-gates): "
        f"{UNSAFE_RULE}; {UNSAFE_FIX}.")]


@pytest.mark.parametrize(("entry", "value"), [({"name": "PartialAdmission", "enabled": "true"}, "true"),
                                              ({"name": "PartialAdmission"}, None),
                                              ({"name": "PartialAdmission", "enabled": 1}, 1)])
def test_a_chart_gate_whose_enabled_is_no_boolean_stops_the_manager(entry, value):
    """The chart renders `printf "%s=%t" .name .enabled`: Go's fmt writes a string, a number or nil (`enabled`
    left out) under %t as `%!t(string=true)`, `%!t(int=1)`, `%!t(<nil>)`, which component-base's ParseBool refuses,
    so the manager does not start. (Before, the rule read such a gate as false and said nothing.) Kills
    `get(entry, "enabled") is True` and its variants (125-132)."""
    found = check_kueue_manager_config(_chart([entry]))
    assert whole(found) == [(
        POLICY, CHART_WHERE, {"PartialAdmission": value},
        "feature gate PartialAdmission must be true or false, and the manager refuses to start on anything else",
        "set PartialAdmission to true or false",
        f"The Chart 'kueue' sets {CHART_WHERE} {{'PartialAdmission': {value!r}}} (the manager's --feature-gates): "
        "feature gate PartialAdmission must be true or false, and the manager refuses to start on anything else; set "
        "PartialAdmission to true or false.")]


def test_a_chart_gate_set_false_is_read_as_false():
    """The safe value of an unsafe gate (DisableWaitForPodsReady=false, its default) is no finding."""
    assert check_kueue_manager_config(_chart([{"name": "DisableWaitForPodsReady", "enabled": False}])) == []


@pytest.mark.parametrize(("name", "chart"), [("queueing", "oci://registry.k8s.io/kueue/charts/kueue"),
                                             ("kueue", "./vendor/charts/queue-manager")])
def test_unknown_chart_gates_fail_closed_when_the_chart_or_its_name_mentions_kueue(name, chart):
    """Kills the unknown branch's tests (chart_feature_gates 30-44): a chart reference or a release name that
    mentions kueue is enough to fail closed."""
    found = check_kueue_manager_config(_chart(UNKNOWN, name=name, chart=chart))
    assert whole(found) == [(
        "unknown-at-preview", CHART_WHERE, MISSING,
        "the value is unknown at preview, so the rule cannot check it and fails closed",
        "give it a value known at preview (a literal or stack config, not an output of another resource)",
        f"The Chart '{name}' has {CHART_WHERE} unknown at preview, so this policy cannot check it and fails closed; "
        f"give {CHART_WHERE} a value known at preview (a literal or stack config, not an output of another "
        "resource).")]


def test_unknown_gates_of_another_chart_are_skipped():
    """The unknown featureGates of a chart that is not Kueue's (ingress-nginx, release `web`) are not judged."""
    assert check_kueue_manager_config(_chart(UNKNOWN, name="web", chart="ingress-nginx")) == []


def test_a_custom_resource_of_kind_chart_is_no_helm_chart():
    """Kills `group == "helm.sh" or kind in (...)` (chart_feature_gates 2): only Pulumi's helm.sh Chart and Release
    carry chart values; a `Chart` of another API group is someone else's object."""
    assert check_kueue_manager_config(_chart([{"name": "Bogus", "enabled": True}],
                                             group_version="charts.example.com/v1")) == []


def test_a_binary_data_configuration_is_judged_like_data():
    """The same Configuration in binaryData (base64) is found at binaryData['controller_manager_config.yaml']."""
    config = _config()
    del config["waitForPodsReady"]
    text = base64.b64encode(yaml.safe_dump(config).encode()).decode()
    obj = kube("kueue-config", {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "kueue-config", "namespace": "kueue-system"},
                                "binaryData": {KEY: text}})
    assert [v.field for v in check_kueue_manager_config(obj)] == [f"binaryData['{KEY}'].waitForPodsReady"]


def test_the_chart_carrier_judges_its_configuration():
    """The Configuration in a kueue Chart's managerConfig is judged at
    values.managerConfig.controllerManagerConfigYaml."""
    config = _config()
    del config["waitForPodsReady"]
    found = check_kueue_manager_config(kube("kueue", _carrier(config, "chart")))
    assert [v.field for v in found] == ["values.managerConfig.controllerManagerConfigYaml.waitForPodsReady"]
