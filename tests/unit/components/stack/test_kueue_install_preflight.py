"""Issue 28 finding 3: under `kueue.install: true` on a real cluster, Kueue's own namespace and Kueue's chart objects
that exist without this stack's mark are refused by the namespace preflight (components/stack/preflight.py), at
`kueue.namespace` / `kueue.install` with the fix, instead of being adopted silently and deleted on destroy: the
namespace present unmarked or marked by another stack, the API already served, any of the chart's cluster-wide
objects (ClusterRoles, ClusterRoleBindings, webhook configurations, APIServices) present. The chart's object table
is checked against the pinned chart's templates. On the sandbox's real API server: tests/e2e/test_12_kueue_install_
preflight.py."""
from __future__ import annotations

import re

import pytest

from kueue_cohorts import toolchain
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.model.kueue_chart import (
    FIXED_NAMES,
    FULLNAME_SUFFIXES,
    ChartObject,
    chart_fullname,
    cluster_objects,
)
from kueue_cohorts.components.stack.preflight import (
    KUEUE_INSTALL_FIX,
    LiveNamespace,
    declared_namespaces,
    kueue_api_problems,
    namespace_problems,
)
from tests.helpers import stack_raw

OWNER = namespace_owner("kueue-cohorts", "prod")
OTHER = namespace_owner("kueue-cohorts", "staging")


def _settings(namespace: str = "kueue-system", mode: str = "kubeconfig", install: bool = True):
    raw = stack_raw("prod")
    raw["kueue"] = {**raw.get("kueue", {}), "install": install, "namespace": namespace}
    if mode != "kubeconfig":
        raw["cluster"] = {"mode": mode, **({"renderDir": "build/x"} if mode == "render" else {})}
        raw.pop("previewIdentity", None)
        raw.get("admission", {}).pop("identities", None)
    return load_settings(raw)


def _problems(settings, live: dict, serves: bool):
    """Every other declared namespace exists as this stack's; ``live`` says how Kueue's is."""
    live = {**{ns.name: LiveNamespace(ns.name, OWNER) for ns in declared_namespaces(settings)
               if ns.name != settings.kueue.namespace}, **live}
    found = namespace_problems(declared_namespaces(settings), live, OWNER)
    return found or kueue_api_problems(settings, live, serves, OWNER)


@pytest.mark.parametrize("namespace", ["kueue-system", "kueue", "platform-kueue"])
@pytest.mark.parametrize("live", [LiveNamespace("X"), LiveNamespace("X", OTHER),
                                  LiveNamespace("X", None, managed_by_us=True)], ids=["unmarked", "other", "legacy"])
def test_an_existing_kueue_namespace_without_our_mark_is_refused(namespace, live):
    settings = _settings(namespace)
    live = LiveNamespace(namespace, live.owner, live.managed_by_us)
    problems = _problems(settings, {namespace: live}, serves=True)
    assert [(p.key, p.value) for p in problems] == [("kueue-cohorts:kueue.namespace", namespace)]
    assert problems[0].fix.startswith(KUEUE_INSTALL_FIX)


@pytest.mark.parametrize("live", [{}, {"kueue-system": LiveNamespace("kueue-system")}], ids=["absent", "unmarked"])
def test_kueue_already_served_without_our_namespace_is_refused_at_install(live):
    """Kueue's CRDs are installed (kueue.x-k8s.io served) and its namespace is not this stack's."""
    settings = _settings()
    problems = kueue_api_problems(settings, live, True, OWNER)
    assert [(p.key, p.value, p.fix) for p in problems] == [("kueue-cohorts:kueue.install", True, KUEUE_INSTALL_FIX)]


def test_our_own_kueue_installation_and_a_fresh_cluster_go_ahead():
    settings = _settings()
    ours = {"kueue-system": LiveNamespace("kueue-system", OWNER)}
    assert _problems(settings, ours, serves=True) == []
    assert _problems(settings, {}, serves=False) == []


@pytest.mark.parametrize("mode,install", [("sandbox", True), ("render", True), ("kubeconfig", False)])
def test_only_a_real_cluster_that_installs_kueue_is_judged(mode, install):
    """The sandbox installs Kueue's namespace and objects itself for the stack it was brought up for; without
    kueue.install the stack uses the installed Kueue (require_kueue_api)."""
    settings = _settings(mode=mode, install=install)
    assert "kueue-system" not in {ns.name for ns in declared_namespaces(settings)}
    assert kueue_api_problems(settings, {"kueue-system": LiveNamespace("kueue-system")}, True, OWNER) == []


# --- the chart's cluster-wide objects ----------------------------------------------------------------------------


#: The chart's parts our values leave off (values.yaml v0.19.2: enableCertManager, enablePrometheus, enableKueueViz,
#: enableVisibilityAPF, enableMutatingAdmissionPolicy all false).
OPTIONAL_PARTS = ("certmanager", "prometheus", "kueueviz", "visibility-apf", "map")
CLUSTER_KINDS = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                 "APIService", "FlowSchema", "PriorityLevelConfiguration", "MutatingAdmissionPolicy",
                 "MutatingAdmissionPolicyBinding"}
NAME = re.compile(r"^  name: '?(\{\{ include \"kueue\.fullname\" \. \}\}-)?([^'\s]+)'?\s*$", re.MULTILINE)


def test_the_chart_table_is_that_of_the_pinned_chart():
    """Every cluster-scoped object but the CRDs in charts/kueue/templates (the optional parts aside), by kind and by
    its name under the fullname or fixed, is in the table, and nothing else."""
    templates = toolchain.chart_dir("kueue") / "templates"
    suffixes, fixed = set(), set()
    for path in sorted(templates.rglob("*.yaml")):
        if path.relative_to(templates).parts[0] in OPTIONAL_PARTS + ("crd",):
            continue
        for doc in re.split(r"^---\s*$", path.read_text(), flags=re.MULTILINE):
            kind = re.search(r"^kind: (\w+)\s*$", doc, re.MULTILINE)
            name = NAME.search(doc)
            if kind is None or kind.group(1) not in CLUSTER_KINDS:
                continue
            assert name is not None, path
            (suffixes if name.group(1) else fixed).add((kind.group(1), name.group(2)))
    assert suffixes == set(FULLNAME_SUFFIXES)
    assert fixed == set(FIXED_NAMES)
    assert len(FULLNAME_SUFFIXES) == len(set(FULLNAME_SUFFIXES))


@pytest.mark.parametrize("values,fullname", [
    ({}, "kueue"), ({"nameOverride": "kueue"}, "kueue"), ({"nameOverride": "ue"}, "kueue"),
    ({"nameOverride": "q"}, "kueue-q"), ({"fullnameOverride": "platform-kueue"}, "platform-kueue"),
    ({"fullnameOverride": "x" * 62 + "-y"}, "x" * 62), ({"nameOverride": "n" * 70}, "kueue-" + "n" * 57),
    ({"fullnameOverride": "", "nameOverride": "q"}, "kueue-q"),
])
def test_the_chart_names_its_objects_from_its_fullname(values, fullname):
    """templates/_helpers.tpl `kueue.fullname` (v0.19.2) with release `kueue`."""
    assert chart_fullname(values) == fullname
    objects = cluster_objects(values)
    assert ChartObject("ClusterRole", f"{fullname}-manager-role") in objects
    assert ChartObject("MutatingWebhookConfiguration", f"{fullname}-mutating-webhook-configuration") in objects
    assert ChartObject("APIService", "v1beta1.visibility.kueue.x-k8s.io") in objects


ROLE = ChartObject("ClusterRole", "kueue-manager-role")
HOOK = ChartObject("ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration")
API = ChartObject("APIService", "v1beta1.visibility.kueue.x-k8s.io")


@pytest.mark.parametrize("found", [[ROLE], [HOOK], [API], [ROLE, HOOK, API], list(cluster_objects({}))[:7]],
                         ids=["cluster-role", "webhook", "apiservice", "three", "seven"])
@pytest.mark.parametrize("live", [{}, {"kueue-system": LiveNamespace("kueue-system", OTHER)}],
                         ids=["no-namespace", "other-stack"])
def test_chart_objects_that_exist_without_our_namespace_are_refused_at_install(found, live):
    """The API is not served (no CRDs), yet some of the chart's cluster-wide objects exist: each is named."""
    problems = kueue_api_problems(_settings(), live, False, OWNER, found)
    assert [(p.key, p.value, p.fix) for p in problems] == [("kueue-cohorts:kueue.install", True, KUEUE_INSTALL_FIX)]
    rule = problems[0].rule
    assert f"already has {len(found)} of the cluster-wide objects Kueue's chart writes" in rule
    assert all(o.describe() in rule for o in sorted(found)[:5])
    assert ("and 2 more" in rule) == (len(found) == 7)
    assert ("by stack kueue-cohorts/staging" in rule) == bool(live)
    assert "serves" not in rule


def test_served_api_and_chart_objects_are_said_together_and_our_own_install_goes_ahead():
    settings = _settings()
    [problem] = kueue_api_problems(settings, {}, True, OWNER, [HOOK])
    assert "already serves kueue.x-k8s.io" in problem.rule and HOOK.describe() in problem.rule
    ours = {"kueue-system": LiveNamespace("kueue-system", OWNER)}
    assert kueue_api_problems(settings, ours, True, OWNER, [ROLE, HOOK, API]) == []
    assert kueue_api_problems(settings, {}, False, OWNER, []) == []
    for mode, install in (("sandbox", True), ("render", True), ("kubeconfig", False)):
        assert kueue_api_problems(_settings(mode=mode, install=install), {}, True, OWNER, [ROLE]) == []
