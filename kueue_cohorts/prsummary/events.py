"""Engine events of one `pulumi preview` -> what the summary reports: resource changes, policy violations, errors.

Input: the Automation API's `pulumi.automation.events.EngineEvent` objects, i.e. the engine's JSON event stream
(`pulumi preview --event-log`, schema pulumi `sdk/go/common/apitype/events.go`): `resourcePreEvent.metadata`
(op, urn, type, diffs, detailedDiff), `policyEvent` (policyName, policyPackName, enforcementLevel, message,
resourceUrn), `diagnosticEvent` (severity, message) and `summaryEvent` (resourceChanges). Pure: no CLI here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from pulumi.automation.events import EngineEvent, StepEventMetadata

NO_CHANGE_OPS = frozenset({"same", "read", "refresh"})
"""Step ops that do not change the stack (the engine's `same`, `read`, `refresh`)."""

OP_RANK = {"replace": 5, "create-replacement": 4, "delete-replaced": 4, "delete": 3, "create": 2, "update": 1}
"""When one URN has several steps (a replacement is create-replacement + replace + delete-replaced), the
summary shows the highest-ranked op."""

STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class ResourceChange:
    """One resource the preview would change: op (engine StepOp: create, update, delete, replace, ...), type token
    (e.g. `kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue`), Pulumi name, URN and the changed property paths."""

    op: str
    type: str
    name: str
    urn: str
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyViolation:
    """One policy result: policy and pack name, enforcement level (`mandatory`, `advisory`, `remediate`, as the
    engine sends it), the message, and the resource URN (None for stack policies)."""

    policy: str
    pack: str
    level: str
    message: str
    urn: Optional[str] = None

    @property
    def mandatory(self) -> bool:
        """True for a mandatory violation (it fails the preview and blocks `pulumi up`)."""
        return self.level.lower() == "mandatory"


@dataclass
class PreviewReport:
    """What one preview said. `ran` is False when no preview was run (the section then says why in `note`).

    changes: resource changes in event order (one per URN, stack resource excluded). violations: mandatory first.
    errors: error diagnostics (e.g. the program's SettingsError). counts: the summary event's op -> count.
    note: how the preview was run (backend, render override), shown under the section heading.
    """

    ran: bool = True
    changes: list[ResourceChange] = field(default_factory=list)
    violations: list[PolicyViolation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    note: str = ""

    @property
    def unchanged(self) -> bool:
        """True if the preview ran, changes nothing, and reported no violation or error."""
        return self.ran and not self.changes and not self.violations and not self.errors


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _paths(meta: StepEventMetadata) -> tuple[str, ...]:
    if meta.detailed_diff:
        return tuple(sorted(meta.detailed_diff))
    return tuple(meta.diffs or ())


def _clean(message: str) -> str:
    return " ".join(message.split())


def report_from_events(events: Iterable[EngineEvent], note: str = "") -> PreviewReport:
    """Fold a preview's engine events into a PreviewReport.

    Args:
        events: the events in stream order (as `Stack.preview(on_event=...)` delivers them).
        note: copied into the report.
    Returns:
        The report; violations sorted mandatory first (then in event order), duplicates dropped.
    """
    steps: dict[str, ResourceChange] = {}
    violations: list[PolicyViolation] = []
    errors: list[str] = []
    counts: dict[str, int] = {}
    for event in events:
        if event.resource_pre_event is not None:
            meta = event.resource_pre_event.metadata
            op = meta.op.value if hasattr(meta.op, "value") else str(meta.op)
            if op in NO_CHANGE_OPS or meta.type == STACK_TYPE:
                continue
            known = steps.get(meta.urn)
            if known is None or OP_RANK.get(op, 0) > OP_RANK.get(known.op, 0):
                paths = _paths(meta) or (known.paths if known else ())
                steps[meta.urn] = ResourceChange(op, meta.type, _name(meta.urn), meta.urn, paths)
        elif event.policy_event is not None:
            pe = event.policy_event
            violation = PolicyViolation(pe.policy_name, pe.policy_pack_name, pe.enforcement_level or "advisory",
                                        _clean(pe.message), pe.resource_urn or None)
            if violation not in violations:
                violations.append(violation)
        elif event.diagnostic_event is not None:
            de = event.diagnostic_event
            if de.severity == "error" and _clean(de.message) and _clean(de.message) not in errors:
                errors.append(_clean(de.message))
        elif event.summary_event is not None:
            counts = {str(getattr(k, "value", k)): int(v) for k, v in event.summary_event.resource_changes.items()}
    violations.sort(key=lambda v: not v.mandatory)
    return PreviewReport(True, list(steps.values()), violations, errors, counts, note)
