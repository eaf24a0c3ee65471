"""The reshaped program registers the same objects as before (issue 19: behaviour kept), with exactly the changes
issue 13 asked for.

tests/fixtures/rendered/<stack>.json holds what every stack registered before the rule-book reshaping (captured
under mocks at a3fd09f). The only intended difference: every ClusterQueue's namespaceSelector also pins
`kubernetes.io/metadata.name In [<its namespaces>]`, so a copied tenant label selects nothing.
"""
from __future__ import annotations

import copy
import json

import pytest

from components.admission_manifests import admission_manifests
from components.settings import parse_settings
from tests.helpers import FIXTURES, registered_objects, stack_raw

NAME_LABEL = "kubernetes.io/metadata.name"


def _with_name_pins(before: list[dict]) -> list[dict]:
    """The old objects with the one intended change applied: each ClusterQueue selector pins its namespaces (the
    Namespace objects carrying its tenant label)."""
    after = copy.deepcopy(before)
    namespaces = [o["inputs"]["metadata"] for o in after if o["type"].endswith(":Namespace")
                  or o["type"].endswith(":NamespacePatch")]
    for obj in after:
        if obj["type"].endswith(":ClusterQueue"):
            selector = obj["inputs"]["spec"]["namespaceSelector"]
            (label, tenant), = selector["matchLabels"].items()
            names = sorted(ns["name"] for ns in namespaces if (ns.get("labels") or {}).get(label) == tenant)
            selector["matchExpressions"] = [{"key": NAME_LABEL, "operator": "In", "values": names}]
    return after


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_every_stack_registers_what_it_did_before_plus_the_name_pins(stack):
    before = json.loads((FIXTURES / "rendered" / f"{stack}.json").read_text())
    now = json.loads(json.dumps(registered_objects(stack), sort_keys=True, default=str))
    # Issue 17 adds the in-cluster guardrails: exactly the rule book's policies and bindings, nothing else changes.
    admission = [o for o in now if o["type"].startswith("kubernetes:admissionregistration.k8s.io/")]
    settings = parse_settings(stack_raw(stack))
    expected = [m for _, policy, binding in admission_manifests(settings) for m in (policy, binding)]
    def key(obj: dict) -> tuple:
        return obj["kind"], obj["metadata"]["name"]

    assert sorted((o["inputs"] for o in admission), key=key) == sorted(
        json.loads(json.dumps(expected, sort_keys=True)), key=key)
    assert [o for o in now if o not in admission] == _with_name_pins(before)
