"""Every stack registers exactly the objects of its reviewed snapshot, tests/fixtures/rendered/<stack>.json (under
Pulumi mocks), plus the guardrails and the preview identity, which are checked against their own generators.

A change that means to change what a stack registers regenerates the snapshot (`python -m tests.regenerate_rendered`)
and the diff of tests/fixtures/rendered is reviewed with it; nothing patches the old snapshot in the test. The last
regeneration (issue 42) replaced six hand-written patches of the a3fd09f capture: the ClusterQueues' namespace-name
pins (issue 13), the Namespaces' ownership marks (issue 14), KServe's maxSurge 0 where the surge does not fit
(issue 21), the stop-is-not-a-failure exit code and the trainer's metrics (issues 26-28), and the cohort components'
fixed names (issue 28).
"""
from __future__ import annotations

import json

import pytest

from kueue_cohorts.components.model.admission import admission_manifests
from kueue_cohorts.components.model.preview_rbac import identity_plan
from kueue_cohorts.components.settings import parse_settings
from tests.helpers import FIXTURES, registered_objects, stack_raw
from tests.regenerate_rendered import is_guardrail, is_preview_identity, snapshot, text


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_every_stack_registers_its_reviewed_snapshot(stack):
    before = json.loads((FIXTURES / "rendered" / f"{stack}.json").read_text())
    now = json.loads(json.dumps(registered_objects(stack), sort_keys=True, default=str))
    # Issue 17 adds the in-cluster guardrails: exactly the rule book's policies and bindings, nothing else changes.
    admission = [o for o in now if is_guardrail(o)]
    settings = parse_settings(stack_raw(stack))
    expected = [m for _, policy, binding in admission_manifests(settings) for m in (policy, binding)]
    def key(obj: dict) -> tuple:
        return obj["kind"], obj["metadata"]["name"]

    assert sorted((o["inputs"] for o in admission), key=key) == sorted(
        json.loads(json.dumps(expected, sort_keys=True)), key=key)
    # Issue 14.2 adds the preview identity: exactly the objects of its plan (staging and prod set previewIdentity).
    identity = [o for o in now if is_preview_identity(o)]
    plan = identity_plan(settings, "kueue-cohorts/test")  # the mocks' project/stack, as _with_owner_marks

    def ref(manifest: dict) -> tuple:
        return manifest["kind"], manifest["metadata"].get("namespace", ""), manifest["metadata"]["name"]

    assert sorted((o["inputs"] for o in identity), key=ref) == sorted(
        json.loads(json.dumps(plan.manifests() if plan else [], sort_keys=True)), key=ref)
    assert bool(identity) == (stack in ("staging", "prod"))
    assert [o for o in now if not is_guardrail(o) and not is_preview_identity(o)] == before


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_snapshot_is_the_regenerators_output_byte_for_byte(stack):
    """What `python -m tests.regenerate_rendered` would write is what is committed (no hand edit of the file)."""
    assert (FIXTURES / "rendered" / f"{stack}.json").read_text() == text(snapshot(stack))
