"""Issue 28 finding 3 on a real API server: with `kueue.install: true` on a real cluster, the namespace preflight
(components/stack/preflight.py `check_namespaces`, what the program runs before registering anything) reads the
sandbox's Kueue, which this stack did not install (its CRDs, its webhook configurations under the chart's names, its
unmarked kueue-system namespace), and refuses each member of the class at its key:
- Kueue's namespace present without the mark (kueue-system) or marked by another stack;
- a namespace of its own (absent), while the cluster serves Kueue's API and has the chart's webhook configurations;
and lets the stack go ahead once Kueue's namespace carries its own mark (it installed them). Then the target such a
stack resolves waits for Kueue's webhooks through the cluster's apiserver (a server-side dry-run ResourceFlavor that
the sandbox's real Kueue webhooks answer). API reads and dry runs only, no engine run."""
from __future__ import annotations

import pytest
from e2e_support import wait_for
from kubernetes import client as k8s

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.kueue import OWNER_ANNOTATION, namespace_owner
from kueue_cohorts.components.model.kueue_chart import ChartObject, cluster_objects
from kueue_cohorts.components.resources.kueue_install import wait_for_webhooks
from kueue_cohorts.components.stack.preflight import NamespacePreflightError, chart_objects_present, check_namespaces
from kueue_cohorts.components.stack.target import SandboxTarget, resolve
from tests.helpers import stack_raw

OWNER = namespace_owner("kueue-cohorts", "prod")
OWN = "held-kueue"  # a namespace of its own for Kueue, absent on the sandbox until the test makes it
HOOKS = [ChartObject("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration"),
         ChartObject("ValidatingWebhookConfiguration", "kueue-validating-webhook-configuration")]


def _settings(namespace: str, kubeconfig: str | None = None):
    """prod (cluster mode kubeconfig) installing Kueue into `namespace`, its other namespaces judged fine whatever
    the other tests left on the sandbox: its tenant namespaces, absent there, under namespacePolicy Create, and no
    preview identity (whose namespace another test may have made)."""
    raw = stack_raw("prod")
    raw["kueue"] = {**raw.get("kueue", {}), "install": True, "namespace": namespace}
    if kubeconfig is not None:  # the sandbox's, with its current context (prod names a context it does not have)
        raw["cluster"] = {"mode": "kubeconfig", "kubeconfig": kubeconfig}
    raw.pop("previewIdentity", None)
    for layout in ("inferenceTraining", "sharedPool"):
        if layout in raw:
            raw[layout]["namespacePolicy"] = "Create"
    return load_settings(raw)


def _kueue_problems(sandbox, namespace: str) -> list[tuple[str, object, str]]:
    try:
        check_namespaces(_settings(namespace), OWNER, sandbox.paths.kubeconfig, None)
    except NamespacePreflightError as err:
        return [(p.key, p.value, p.rule) for p in err.problems if p.key.startswith("kueue-cohorts:kueue.")]
    return []


@pytest.fixture
def own_namespace(cluster):
    """Delete the namespace `OWN` after the test and wait until it is gone (a terminating namespace refuses the next
    test's create with 409 "object is being deleted")."""
    yield
    try:
        cluster.core.delete_namespace(OWN)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise

    def gone() -> bool:
        try:
            cluster.core.read_namespace(OWN)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(gone, 120, f"the namespace {OWN} to be gone")


def test_kueue_objects_this_stack_did_not_install_are_refused(sandbox, cluster, own_namespace):
    # The chart's cluster-wide objects the sandbox has: its two webhook configurations, under the chart's names.
    assert set(HOOKS) <= set(chart_objects_present(sandbox.paths.kubeconfig, None, cluster_objects({})))
    assert chart_objects_present(sandbox.paths.kubeconfig, None, cluster_objects({"fullnameOverride": "other"})) == []

    # kueue-system exists, unmarked (the sandbox made it).
    [(key, value, rule)] = _kueue_problems(sandbox, "kueue-system")
    assert (key, value) == ("kueue-cohorts:kueue.namespace", "kueue-system")
    assert "has no kueue-cohorts/owner annotation" in rule

    # A namespace of its own, absent: the served API and the webhook configurations are named at kueue.install.
    [(key, value, rule)] = _kueue_problems(sandbox, OWN)
    assert (key, value) == ("kueue-cohorts:kueue.install", True)
    assert "already serves kueue.x-k8s.io" in rule and all(h.describe() in rule for h in HOOKS), rule

    # Marked by another stack: refused at kueue.namespace.
    other = namespace_owner("kueue-cohorts", "staging")
    cluster.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(
        name=OWN, annotations={OWNER_ANNOTATION: other})))
    [(key, value, rule)] = _kueue_problems(sandbox, OWN)
    assert (key, value) == ("kueue-cohorts:kueue.namespace", OWN) and f"stack {other} created it" in rule

    # Marked by this stack: it installed them; nothing to refuse.
    cluster.core.patch_namespace(OWN, {"metadata": {"annotations": {OWNER_ANNOTATION: OWNER}}})
    assert _kueue_problems(sandbox, OWN) == []


def _no_sandbox() -> tuple[str, bytes]:
    raise AssertionError("a kubeconfig-mode stack never asks for the sandbox's manager")


def test_a_kubeconfig_stack_installing_kueue_waits_for_its_webhooks_through_the_apiserver(sandbox, cluster,
                                                                                           own_namespace):
    cluster.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(
        name=OWN, annotations={OWNER_ANNOTATION: OWNER})))
    settings = _settings(OWN, str(sandbox.paths.kubeconfig))
    target = resolve(settings, OWNER, SandboxTarget(sandbox.paths.kubeconfig, _no_sandbox))
    readiness = target.webhook_readiness
    assert target.manager is None and readiness is not None
    assert readiness.what == "a dry-run ResourceFlavor through the apiserver"
    # The sandbox's Kueue answers the dry run through the apiserver: the wait returns at its first attempt.
    _, failures = wait_for_webhooks(readiness)
    assert failures == 0

