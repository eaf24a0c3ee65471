"""Engine events (the JSON of `pulumi preview --event-log`, sdk/go/common/apitype/events.go) -> PreviewReport."""
from __future__ import annotations

from pulumi.automation.events import EngineEvent

from kueue_cohorts.prsummary.events import report_from_events

CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
P = "urn:pulumi:staging::kueue-cohorts::"


def step(op: str, typ: str, name: str, detailed: dict | None = None, diffs: list | None = None) -> EngineEvent:
    meta = {"op": op, "urn": f"{P}{typ}::{name}", "type": typ, "provider": ""}
    if detailed is not None:
        meta["detailedDiff"] = {k: {"diffKind": v, "inputDiff": True} for k, v in detailed.items()}
    if diffs is not None:
        meta["diffs"] = diffs
    return EngineEvent.from_json({"sequence": 1, "timestamp": 0, "resourcePreEvent": {"metadata": meta}})


def policy(name: str, level: str, message: str, urn: str | None = None) -> EngineEvent:
    data = {"message": message, "color": "never", "policyName": name, "policyPackName": "kueue-cohorts",
            "policyPackVersion": "0.1.0", "policyPackVersionTag": "0.1.0", "enforcementLevel": level}
    if urn:
        data["resourceUrn"] = urn
    return EngineEvent.from_json({"sequence": 2, "timestamp": 0, "policyEvent": data})


def diag(severity: str, message: str) -> EngineEvent:
    return EngineEvent.from_json({"sequence": 3, "timestamp": 0,
                                  "diagnosticEvent": {"message": message, "color": "never", "severity": severity}})


def summary(changes: dict) -> EngineEvent:
    return EngineEvent.from_json({"sequence": 4, "timestamp": 0,
                                  "summaryEvent": {"maybeCorrupt": False, "durationSeconds": 1,
                                                   "resourceChanges": changes, "PolicyPacks": {}}})


def test_only_changing_steps_are_kept_with_their_paths():
    report = report_from_events([
        step("same", "pulumi:pulumi:Stack", "kueue-cohorts-staging"),
        step("same", CQ, "a-cq"),
        step("update", CQ, "b-cq", {"spec.resourceGroups[0].flavors[0].resources[0].nominalQuota": "update"}),
        step("create", "kubernetes:core/v1:Namespace", "ns", diffs=["metadata"]),
        summary({"same": 2, "update": 1, "create": 1}),
    ])
    assert [(c.op, c.name) for c in report.changes] == [("update", "b-cq"), ("create", "ns")]
    assert report.changes[0].paths == ("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",)
    assert report.changes[1].paths == ("metadata",)
    assert report.counts == {"same": 2, "update": 1, "create": 1}
    assert not report.unchanged


def test_a_replacement_is_one_row_with_op_replace():
    report = report_from_events([
        step("create-replacement", CQ, "q", {"spec.cohortName": "update-replace"}),
        step("replace", CQ, "q"),
        step("delete-replaced", CQ, "q"),
    ])
    assert [(c.op, c.name, c.paths) for c in report.changes] == [("replace", "q", ("spec.cohortName",))]


def test_violations_mandatory_first_deduplicated_and_errors_collected():
    urn = f"{P}{CQ}::q"
    report = report_from_events([
        policy("cluster-queue-namespace-selector", "advisory", "The ClusterQueue 'q' ...", urn),
        policy("cohort-nominal-within-capacity", "mandatory", "The cohort 'research' sums to\n 10 GPUs."),
        policy("cohort-nominal-within-capacity", "mandatory", "The cohort 'research' sums to\n 10 GPUs."),
        diag("warning", "a warning"),
        diag("error", "preview failed: 1 mandatory violation"),
    ])
    assert [(v.policy, v.mandatory) for v in report.violations] == [
        ("cohort-nominal-within-capacity", True), ("cluster-queue-namespace-selector", False)]
    assert report.violations[0].message == "The cohort 'research' sums to 10 GPUs."
    assert report.violations[0].urn is None and report.violations[1].urn == urn
    assert report.errors == ["preview failed: 1 mandatory violation"]


def test_nothing_to_do_is_unchanged():
    report = report_from_events([step("same", CQ, "q"), summary({"same": 1})])
    assert report.unchanged and report.changes == []
