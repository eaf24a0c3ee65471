"""KUEUE_MANAGER_CONFIG: the Kueue manager Configuration managed by the stack is safe, and keeps Kueue counting.

Where a Configuration is found: any ConfigMap `data` value, or `binaryData` value (base64), that is a YAML
`config.kueue.x-k8s.io/*` `Configuration` (the kueue chart renders it as ConfigMap `<release>-manager-config`, key
`controller_manager_config.yaml`), and the `managerConfig.controllerManagerConfigYaml` value of a Helm
`kubernetes:helm.sh/v4:Chart` or `kubernetes:helm.sh/v3:Release` (kueue chart `values.yaml`). Feature gates are
found there too (`featureGates`), in the chart's `controllerManager.featureGates` values (rendered as the manager's
`--feature-gates` flag, charts/kueue/templates/_helpers.tpl) and in the `--feature-gates` argument of a Kueue
manager Deployment's container (a Deployment whose name or a container image mentions kueue).

Rules (upstream v0.19.2 `apis/config/v1beta2/configuration_types.go`, `defaults.go`, `pkg/config/validation.go`,
`pkg/features/kube_features.go`; the model is `vocabulary/kueue_counts.py`):
1. `manageJobsWithoutQueueName: true` needs an explicit `managedJobsNamespaceSelector` that does not select
   kube-system nor Kueue's own namespace (`namespace`, default from the policy config, `kueue-system`), judged on
   the namespace's `kubernetes.io/metadata.name` label (the only label every namespace is known to carry);
2. `waitForPodsReady` is present with a positive `timeout` (and, in v1beta1, `enable: true`);
3. what the Configuration alone breaks in Kueue's counting (`kueue_counts.parse`): a feature gate that switches a
   counting protection off, is unknown, not a boolean or locked (the manager does not start); `quotaCheckStrategy:
   IgnoreUndeclared` or an unknown strategy; an unknown integration framework; a malformed transformation; an empty
   exclusion prefix. What depends on the stack (the resources its queues quota, its tenant namespaces, the kinds it
   runs) is judged by CLUSTER_QUEUE_COVERS_POD_RESOURCES (cluster_queue_covers_pod_resources.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import yaml

from .vocabulary import durations, kueue_counts, selectors
from .vocabulary.declaration import Declaration, Level, Promise, Scope, string
from .vocabulary.kueue_configuration import CONFIG_GROUP, configurations
from .vocabulary.kueue_manager import chart_feature_gates, feature_gate_flags
from .vocabulary.objects import KubeObject, guarded, show_value, violation
from .vocabulary.selectors import NAME_LABEL
from .vocabulary.values import MISSING, Violation, as_list, get, is_map


@dataclass(frozen=True)
class ConfigProblem:
    """One problem of a Kueue manager Configuration: `field` is its path inside the Configuration
    ("waitForPodsReady.timeout"), `value` the offending value, `rule` and `fix` clauses, `text` the sentence fragment
    the pack's message uses ("sets ... ; add ...")."""

    field: str
    value: Any
    rule: str
    fix: str
    text: str


def check_configuration(config: Mapping[str, Any], default_namespace: str) -> list[ConfigProblem]:
    """The problems of one parsed Configuration (config.kueue.x-k8s.io v1beta1 or v1beta2).

    Args:
        config: the parsed Configuration. default_namespace: Kueue's namespace when the Configuration has none.
    Returns:
        One ConfigProblem per broken rule (see the module docstring).
    """
    problems = []
    namespace = str(get(config, "namespace") or default_namespace)
    protected = f"[kube-system, {namespace}]"
    if get(config, "manageJobsWithoutQueueName") is True:
        selector = get(config, "managedJobsNamespaceSelector")
        if selector is MISSING or not is_map(selector):
            problems.append(ConfigProblem(
                "managedJobsNamespaceSelector", selector,
                "with manageJobsWithoutQueueName true, Kueue suspends every job it selects, so a "
                "managedJobsNamespaceSelector must exclude kube-system and Kueue's namespace",
                f"add managedJobsNamespaceSelector {{matchExpressions: [{{key: {NAME_LABEL}, operator: NotIn, values: "
                f"{protected}}}]}}, or set manageJobsWithoutQueueName to false",
                "sets manageJobsWithoutQueueName: true without a managedJobsNamespaceSelector, so Kueue would suspend "
                f"jobs in every namespace; add managedJobsNamespaceSelector with matchExpressions [{{key: "
                f"{NAME_LABEL}, "
                f"operator: NotIn, values: [kube-system, {namespace}]}}]"))
        else:
            caught = [ns for ns in ("kube-system", namespace) if selectors.matches(selector, {NAME_LABEL: ns})]
            if caught:
                names = " and ".join(f"'{ns}'" for ns in dict.fromkeys(caught))
                problems.append(ConfigProblem(
                    "managedJobsNamespaceSelector", selector,
                    f"with manageJobsWithoutQueueName true, Kueue suspends every job it selects, and this selector "
                    f"selects {names}",
                    f"exclude them, e.g. {{matchExpressions: [{{key: {NAME_LABEL}, operator: NotIn, values: "
                    f"{protected}}}]}}, or use an opt-in selector",
                    f"sets manageJobsWithoutQueueName: true with a managedJobsNamespaceSelector that selects {names}, "
                    f"so Kueue would suspend system pods; exclude them, e.g. {{key: {NAME_LABEL}, operator: NotIn, "
                    f"values: [kube-system, {namespace}]}}"))
    for found in kueue_counts.parse(config, default_namespace).problems:
        problems.append(_from_model(found))
    wait = get(config, "waitForPodsReady")
    api_version = str(get(config, "apiVersion") or "")
    if wait is MISSING or not is_map(wait):
        problems.append(ConfigProblem(
            "waitForPodsReady", wait,
            "an admitted workload whose pods never start must give its quota back: waitForPodsReady is required",
            "add waitForPodsReady with a timeout (e.g. timeout: 10m)",
            "has no waitForPodsReady; add waitForPodsReady with a timeout (e.g. timeout: 10m) so that "
            "an admitted workload whose pods never start gives its quota back"))
    else:
        if api_version.endswith("/v1beta1") and get(wait, "enable") is not True:
            problems.append(ConfigProblem(
                "waitForPodsReady.enable", get(wait, "enable"), "config v1beta1 needs waitForPodsReady.enable: true",
                "enable it", "does not set waitForPodsReady.enable: true (config v1beta1); enable it"))
        timeout = get(wait, "timeout")
        trouble = duration_problem(timeout)
        if trouble is not None:
            shown = "missing" if timeout is MISSING else f"{timeout!r}"
            problems.append(ConfigProblem(
                "waitForPodsReady.timeout", timeout, f"waitForPodsReady.timeout: {trouble}",
                "set a positive Go duration such as 10m",
                f"has waitForPodsReady.timeout {shown}; set a positive duration such as 10m"))
        problems += wait_for_pods_ready_problems(wait)
    return problems


def wait_for_pods_ready_problems(wait: Mapping[str, Any]) -> list[ConfigProblem]:
    """What Kueue's manager refuses to start with in `waitForPodsReady`, besides the timeout (judged above, stricter:
    positive). Upstream v0.19.2 `pkg/config/validation.go` validateWaitForPodsReady: `recoveryTimeout` not negative
    ("0s" switches recovery off; omitted, `apis/config/v1beta2/defaults.go` sets it to `timeout`);
    `requeuingStrategy.timestamp` Creation or Eviction; `backoffLimitCount`, `backoffBaseSeconds`,
    `backoffMaxSeconds` not negative. The durations are metav1.Duration (Go's time.ParseDuration) and the counts int32
    (`apis/config/v1beta2/configuration_types.go`), so a value that does not decode stops the manager too.

    Args:
        wait: the Configuration's `waitForPodsReady` mapping.
    Returns:
        One ConfigProblem per field the manager would refuse, with its fix.
    """
    problems: list[ConfigProblem] = []
    recovery = get(wait, "recoveryTimeout")
    if recovery is not MISSING:
        trouble = None
        if not isinstance(recovery, str):
            trouble = f"{recovery!r:.80} is not a Go duration string"
        else:
            try:
                if durations.parse_go_duration(recovery) < 0:
                    trouble = f"{recovery!r:.80} is negative"
            except ValueError as err:
                trouble = f"{recovery!r:.80} is not a Go duration ({err})"
        if trouble is not None:
            problems.append(ConfigProblem(
                "waitForPodsReady.recoveryTimeout", recovery,
                f"waitForPodsReady.recoveryTimeout: {trouble}, and Kueue's manager refuses to start with it",
                "set a positive Go duration such as 10m, 0s to switch the recovery timeout off, or leave it out (it "
                "then equals timeout)",
                f"has waitForPodsReady.recoveryTimeout {trouble}, so Kueue's manager would not start; set a positive "
                "duration such as 10m, 0s to switch it off, or leave it out (it then equals timeout)"))
    strategy = get(wait, "requeuingStrategy")
    if strategy is MISSING or not is_map(strategy):
        return problems
    timestamp = get(strategy, "timestamp")
    if timestamp is not MISSING and timestamp not in ("Creation", "Eviction"):
        problems.append(ConfigProblem(
            "waitForPodsReady.requeuingStrategy.timestamp", timestamp,
            f"waitForPodsReady.requeuingStrategy.timestamp {timestamp!r:.80} is not Creation or Eviction, and Kueue's "
            "manager refuses to start with it", "set Eviction (the default) or Creation",
            f"has waitForPodsReady.requeuingStrategy.timestamp {timestamp!r:.80}, so Kueue's manager would not start; "
            "set Eviction (the default) or Creation"))
    for name in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
        value = get(strategy, name)
        if value is MISSING:
            continue
        whole = (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float)
                                                                             and value.is_integer())
        if whole and 0 <= value <= 2**31 - 1:
            continue
        what = "is negative" if whole and value < 0 else "is not a whole number within int32"
        problems.append(ConfigProblem(
            f"waitForPodsReady.requeuingStrategy.{name}", value,
            f"waitForPodsReady.requeuingStrategy.{name} {value!r:.80} {what}, and Kueue's manager refuses to start "
            "with it", "set a whole number from 0 to 2147483647",
            f"has waitForPodsReady.requeuingStrategy.{name} {value!r:.80}, which {what}, so Kueue's manager would "
            "not start; set a whole number from 0 to 2147483647"))
    return problems


def _from_model(found: kueue_counts.Problem) -> ConfigProblem:
    """A `kueue_counts.Problem` worded as the pack's message fragment."""
    return ConfigProblem(found.field, found.value, found.rule, found.fix,
                         f"sets {found.field} = {show_value(found.value)}: {found.rule}; {found.fix}")


def duration_problem(raw: Any) -> Optional[str]:
    """Why `raw` is not a positive Go duration within Go's range (a clause), or None when it is one
    (`durations.positive_duration_problem`: Go's time.ParseDuration exactly)."""
    if raw is MISSING:
        return "is missing"
    return durations.positive_duration_problem(raw)


def check_kueue_manager_config(obj: KubeObject, kueue_namespace: str = "kueue-system") -> list[Violation]:
    """KUEUE_MANAGER_CONFIG for one object.

    Args:
        obj: any object; ConfigMaps and Helm Charts/Releases that carry a Kueue Configuration are judged.
        kueue_namespace: Kueue's namespace when the Configuration does not set `namespace` (policy config
            `kueueNamespace`).
    Returns:
        One Violation per problem of each Configuration found (see module docstring), one for YAML that does not
        parse, and the fail-closed one for unknown values.
    """
    def check() -> list[Violation]:
        found = []
        for where, text in configurations(obj):
            try:
                config = yaml.safe_load(text) if isinstance(text, str) else text
            except yaml.YAMLError as err:
                found.append(violation(
                    obj, KUEUE_MANAGER_CONFIG.name,
                    where, MISSING, "a Kueue Configuration must be valid YAML", "fix the YAML",
                    message=f"The {obj.describe()} has a Kueue Configuration in {where} that is not valid YAML "
                    f"({err}); fix it."))
                continue
            if not is_map(config) or (obj.kind == "ConfigMap" and not str(get(config, "apiVersion") or "")
                                      .startswith(CONFIG_GROUP)):
                continue
            for problem in check_configuration(config, kueue_namespace):
                found.append(violation(
                    obj, KUEUE_MANAGER_CONFIG.name,
                    f"{where}.{problem.field}", problem.value, problem.rule, problem.fix,
                    message=f"The Kueue Configuration in {where} of the {obj.describe()} {problem.text}."))
        for where, flag in feature_gate_flags(obj):
            if flag is None:
                found.append(violation(
                    obj, KUEUE_MANAGER_CONFIG.name, where, "--feature-gates",
                    "the manager refuses to start: flag needs an argument: --feature-gates",
                    "give --feature-gates its gates (--feature-gates=Name=true,...) or remove it",
                    message=f"The {obj.describe()} runs Kueue's manager with {where} = '--feature-gates' and no "
                    "value after it: the manager refuses to start (flag needs an argument); give --feature-gates "
                    "its gates (--feature-gates=Name=true,...) or remove it."))
                continue
            text = flag
            gates, malformed = kueue_counts.parse_feature_gates_flag(text)
            flagged = [kueue_counts.Problem(where, text, f"the manager refuses to start: {clause}",
                                            "write each gate as Name=true or Name=false") for clause in malformed]
            for gate in flagged + kueue_counts.gate_problems(gates, where):
                found.append(violation(obj, KUEUE_MANAGER_CONFIG.name, where, gate.value, gate.rule, gate.fix,
                                       message=f"The {obj.describe()} runs Kueue's manager with {where} = "
                                       f"{show_value(text)}: {gate.rule}; {gate.fix}."))
        chart_gates = chart_feature_gates(obj)
        if chart_gates is not None:
            where = "values.controllerManager.featureGates"
            # The chart renders each entry as printf "%s=%t" .name .enabled (charts/kueue/templates/_helpers.tpl): an
            # `enabled` that is no YAML boolean (missing: nil) renders as "%!t(...)", which the manager refuses.
            chart: dict[str, Any] = {}
            for entry in as_list(chart_gates):
                enabled = get(entry, "enabled")
                chart[str(get(entry, "name"))] = None if enabled is MISSING else enabled
            for gate in kueue_counts.gate_problems(chart, where):
                found.append(violation(obj, KUEUE_MANAGER_CONFIG.name, where, gate.value, gate.rule, gate.fix,
                                       message=f"The {obj.describe()} sets {where} {show_value(gate.value)} "
                                       f"(the manager's --feature-gates): {gate.rule}; {gate.fix}."))
        return found

    return guarded(obj, check)


KUEUE_NAMESPACE = string(
    "kueueNamespace", "kueue-system", "Kueue's namespace, used when the Configuration does not set `namespace`.")

KUEUE_MANAGER_CONFIG: Declaration = Declaration(
    name="kueue-manager-config",
    description="The Kueue manager Configuration limits manageJobsWithoutQueueName, sets a waitForPodsReady timeout, "
                "and switches off no counting protection (feature gates, quotaCheckStrategy) nor the manager itself.",
    promise=Promise.KUEUE_COUNTS, level=Level.MANDATORY, scope=Scope.RESOURCE,
    check=lambda obj, options: check_kueue_manager_config(obj, KUEUE_NAMESPACE.read(options)),
    options=(KUEUE_NAMESPACE,))
