"""Issue 28 finding 3: under `kueue.install: true` on a real cluster, Kueue's own namespace and Kueue's chart objects
that exist without this stack's mark are refused by the namespace preflight (components/stack/preflight.py), at
`kueue.namespace` / `kueue.install` with the fix, instead of being adopted silently and deleted on destroy."""
from __future__ import annotations

import pytest

from components.checks.validation import load_settings
from components.model.kueue import namespace_owner
from components.stack.preflight import (
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
