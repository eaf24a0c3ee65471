"""An interrupted 60-tenant ``up`` against the sandbox, through the deploy CLI (issue 20, items 1 and 2).

For each kill point (the pulumi CLI killed with SIGKILL as it starts creating, after a third and after most of the
objects), the next ``up`` reports the stale lock with the command that clears it; ``cancel`` clears it; one ``up``
converges, reconciling the killed run's pending operations (objects it created are adopted into the state, not
taken over silently) and saying what it did; ``preview --expect-no-changes`` then passes, and every object of the
stack exists in the cluster. Each kill point uses its own stack (own tenants, namespaces and ResourceFlavor).
The outcomes are printed (``pytest -s``) and written to ``$KUEUE_COHORTS_INTERRUPTED_REPORT`` when set.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.deploycli import bare_env, clone, deploy
from tests.integration.test_deploy_interrupted import kill_mid_run, lock_files

TENANTS = 60
#: (name, how many "created" lines the killed run's output shows before the kill)
KILL_POINTS = [("k0", 0), ("k1", 60), ("k2", 160)]


def big_stack(prefix: str) -> dict:
    """A sandbox-mode shared pool of TENANTS tenants (a namespace, ClusterQueue and LocalQueue each)."""
    return {"config": {
        "kueue-cohorts:cluster": {"mode": "sandbox"},
        "kueue-cohorts:nodePools": [{"name": "big", "count": 1, "capacity": {"cpu": str(TENANTS), "memory": "1Ti"}}],
        "kueue-cohorts:resourceFlavor": {"name": f"{prefix}-flavor"},
        "kueue-cohorts:sharedPool": {
            "cohort": f"{prefix}-pool",
            "tenants": [{"name": f"{prefix}-t{i:02d}", "floor": {"cpu": "1", "memory": "8Gi"}} for i in range(TENANTS)],
        },
    }}


@pytest.fixture(scope="module")
def project(sandbox, tmp_path_factory) -> Path:
    root = clone(tmp_path_factory.mktemp("clone") / "kueue-cohorts")
    for name, _ in KILL_POINTS:
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(big_stack(name), sort_keys=False))
    return root


def _marker_count(log: Path, word: str) -> int:
    return len(re.findall(rf"\b{word}\b", log.read_text()))


@pytest.mark.parametrize("stack, created_before_kill", KILL_POINTS, ids=[k for k, _ in KILL_POINTS])
def test_sigkill_then_cancel_then_one_up_converges(project, tmp_path, cluster, stack, created_before_kill):
    env = bare_env(tmp_path)
    state = tmp_path / "state"
    log = tmp_path / "killed.log"

    def ready(out: str) -> bool:
        if created_before_kill == 0:
            return len(re.findall(r"\bcreating\b", out)) >= 1
        return len(re.findall(r"\bcreated\b", out)) >= created_before_kill

    pid = kill_mid_run(project, env, log, ready, stack=stack)
    created_by_killed = _marker_count(log, "created")

    locked = deploy(project, "up", "--stack", stack, env=env)
    assert locked.returncode == 1 and f"pid {pid} " in locked.stderr
    assert f"`kueue-cohorts cancel --stack {stack}` clears the lock" in locked.stderr

    cancel = deploy(project, "cancel", "--stack", stack, env=env)
    assert cancel.returncode == 0 and not lock_files(state, stack)

    start = time.monotonic()
    up = deploy(project, "up", "--stack", stack, env=env)
    seconds = time.monotonic() - start
    assert up.returncode == 0, up.stdout + up.stderr
    assert "Traceback" not in up.stdout + up.stderr

    preview = deploy(project, "preview", "--stack", stack, "--expect-no-changes", env=env)
    assert preview.returncode == 0, preview.stdout + preview.stderr

    names = {cq["metadata"]["name"] for cq in cluster.custom.list_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "clusterqueues")["items"]}
    assert {f"{stack}-t{i:02d}-cq" for i in range(TENANTS)} <= names

    outcome = {
        "kill_point": f"after {created_before_kill} created" if created_before_kill else "first creating",
        "created_by_killed_run": created_by_killed,
        "adopted": len(re.findall(r"adopted \(the interrupted run had created it\)", up.stdout)),
        "dropped": len(re.findall(r"absent, dropped from the state", up.stdout)),
        "settled": len(re.findall(r"read back after an interrupted", up.stdout)),
        "up_summary": ", ".join(line.strip() for line in up.stdout.splitlines()
                                if re.match(r"^\s*(\+|~|-|\+-)?\s*\d+ (created|unchanged|updated|deleted|replaced)\s*$",
                                            line)),
        "up_seconds": round(seconds, 1),
        "preview_expect_no_changes": "passed",
    }
    print(json.dumps({stack: outcome}))
    report = os.environ.get("KUEUE_COHORTS_INTERRUPTED_REPORT")
    if report:
        with open(report, "a") as fh:
            fh.write(json.dumps({stack: outcome}) + "\n")


# Kept as a strict xfail (tests/conftest.py allows no other kind): the pinned CLI's behaviour is measured, the product
# documents it (docs/operations.md), and the test starts failing the run the day a pulumi bump makes it pass.
@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="measured 2026-11-30: with pulumi 3.259.0 `refresh --import-pending-creates` "
                   "turns the pending create into a pending import that the refresh does not read, so the object the "
                   "killed run created is dropped and then re-created (taken over) by the up; follow-up in the report")
def test_pending_creates_are_adopted_or_dropped_by_what_the_cluster_has(project, tmp_path, cluster):
    """Deterministic kill point: the state of a run killed between a create and its record, made from a real one
    (`pulumi stack export`, two LocalQueues moved into pending creates, one of them also deleted from the cluster,
    `pulumi stack import`). The next `up` adopts the one the cluster has, drops and re-creates the other, says so,
    and a following preview shows no changes."""
    name = "pend"
    doc = big_stack(name)
    doc["config"]["kueue-cohorts:sharedPool"]["tenants"] = doc["config"]["kueue-cohorts:sharedPool"]["tenants"][:3]
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    env = bare_env(tmp_path)
    up = deploy(project, "up", "--stack", name, env=env)
    assert up.returncode == 0, up.stdout + up.stderr

    # The checkpoint file of the file backend, edited as a killed run leaves it (`pulumi stack import` would drop
    # pending operations, so the file itself is edited).
    (checkpoint,) = (tmp_path / "state" / ".pulumi" / "stacks").glob(f"**/{name}.json")
    data = json.loads(checkpoint.read_text())
    latest = data["checkpoint"]["latest"]
    resources = latest["resources"]
    queues = [r for r in resources if r["type"].endswith(":LocalQueue")][:2]
    assert len(queues) == 2
    latest["resources"] = [r for r in resources if r not in queues]
    latest["pending_operations"] = [
        {"resource": {**{k: v for k, v in q.items() if k not in ("id", "outputs")}, "outputs": {}}, "type": "creating"}
        for q in queues]
    checkpoint.write_text(json.dumps(data))
    kept, gone = queues
    gone_ns, gone_name = gone["inputs"]["metadata"]["namespace"], gone["inputs"]["metadata"]["name"]
    cluster.custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", gone_ns, "localqueues", gone_name)

    again = deploy(project, "up", "--stack", name, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "the last run was interrupted with 2 pending operation(s)" in again.stdout
    assert f"adopted (the interrupted run had created it): {kept['urn']}" in again.stdout
    assert f"absent, dropped from the state (this up creates it): {gone['urn']}" in again.stdout
    assert cluster.custom.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", gone_ns, "localqueues", gone_name)
    preview = deploy(project, "preview", "--stack", name, "--expect-no-changes", env=env)
    assert preview.returncode == 0, preview.stdout + preview.stderr
