"""The pure rendering: table cells, box diagrams, section order, the one-line unchanged summary."""
from __future__ import annotations

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.prsummary import diagram, document, quotas, tables
from kueue_cohorts.prsummary.events import PolicyViolation, PreviewReport, ResourceChange
from tests.helpers import stack_raw

CQ_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
URN = f"urn:pulumi:staging::kueue-cohorts::kueue-cohorts:index:SharedPoolCohort${CQ_TYPE}::research-team-vision-cq"


def _tables(change=None) -> list[quotas.CohortTable]:
    before, after = stack_raw("staging"), stack_raw("staging")
    if change:
        change(after)
    return quotas.compare(quotas.snapshot(load_settings(before)), quotas.snapshot(load_settings(after)))


def _lower_vision_gpu(raw):
    raw["sharedPool"]["tenants"][0]["floor"]["nvidia.com/gpu"] = "1"


def test_cell_text():
    assert tables.cell_text(quotas.Cell("4", "4")) == "4"
    assert tables.cell_text(quotas.Cell("2", "1")) == "**2 → 1**"
    assert tables.cell_text(quotas.Cell(None, None)) == tables.UNSET
    assert tables.cell_text(quotas.Cell(None, "1", present_before=False)) == f"**{tables.ABSENT} → 1**"
    assert tables.cell_text(quotas.Cell("1", None, present_after=False)) == f"**1 → {tables.ABSENT}**"


def test_table_has_a_row_per_queue_and_resource_and_bolds_only_changed_cells():
    research = _tables(_lower_vision_gpu)[1]
    lines = tables.render_table(research).splitlines()
    assert lines[0] == "| ClusterQueue | resource | nominalQuota | borrowingLimit | lendingLimit |"
    assert len(lines) == 2 + 2 * 3
    bold = [line for line in lines if "**" in line]
    assert bold == [
        "| `team-vision-cq` (tenant) | `nvidia.com/gpu` | **2 → 1** | 2 | – |",
        "| `team-speech-cq` (tenant) | `nvidia.com/gpu` | 2 | **2 → 1** | 1 |",
    ]


def test_diagram_boxes_are_closed_and_mark_changes():
    research = _tables(_lower_vision_gpu)[1]
    text = diagram.render_diagram(research.after, research.changed_cells())
    lines = text.splitlines()
    assert lines[0] == "cohort research (shared-pool)"
    box = lines[1:]
    assert box[0].startswith("┌") and box[-1].startswith("└")
    assert len({len(line) for line in box}) == 1, "every line of the cohort box has the same width"
    assert all(line.startswith("│") and line.endswith("│") for line in box[1:-1])
    assert "team-vision-cq" in text and "team-speech-cq" in text
    gpu_rows = [line for line in box if "│ gpu " in line]
    assert len(gpu_rows) == 1 and "1*" in gpu_rows[0] and gpu_rows[0].count("*") == 2


def test_diagram_wraps_after_three_queues_and_shows_unlimited_borrowing():
    cohort = quotas.CohortQuotas("c", "shared-pool", tuple(
        quotas.QueueQuotas(f"q{i}", "tenant", {"cpu": {"nominalQuota": "1", "borrowingLimit": None,
                                                        "lendingLimit": None}}) for i in range(4)))
    lines = diagram.render_diagram(cohort).splitlines()
    tops = [line.count("┌") for line in lines if "┌" in line]
    assert tops == [1, 3, 1]  # the cohort box, a row of 3 queue boxes, then the 4th queue's box
    assert any(diagram.UNLIMITED in line and "cpu" in line for line in lines)


def _report(**kw) -> PreviewReport:
    return PreviewReport(**kw)


def test_unchanged_stack_is_one_line():
    text = document.render("staging", "origin/main", _report(), document.QuotaSide(tuple(_tables())))
    assert text.count("\n") == 1 and text.endswith("\n")
    assert "no changes" in text and "`staging`" in text and document.marker("staging") in text


def test_sections_in_order_violations_first_mandatory_marked():
    violations = [
        PolicyViolation("inference-reclaim-any", "kueue-cohorts", "advisory", "advisory text", URN),
        PolicyViolation("cohort-nominal-within-capacity", "kueue-cohorts", "mandatory", "too much GPU", None),
    ]
    violations.sort(key=lambda v: not v.mandatory)
    report = _report(changes=[ResourceChange("update", CQ_TYPE, "research-team-vision-cq", URN,
                                             ("spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",))],
                     violations=violations, counts={"update": 1, "same": 20})
    text = document.render("staging", "origin/main", report,
                           document.QuotaSide(tuple(_tables(_lower_vision_gpu))))
    lines = text.splitlines()
    first_bullet = next(i for i, line in enumerate(lines) if line.startswith("- "))
    assert "🛑 **mandatory** `cohort-nominal-within-capacity`" in lines[first_bullet]
    assert "⚠️ advisory `inference-reclaim-any`" in lines[first_bullet + 1]
    assert "`research-team-vision-cq`" in lines[first_bullet + 1]
    order = [text.index(h) for h in ("#### Policy", "#### Resource changes", "#### Quotas")]
    assert order == sorted(order) and text.index("mandatory violation") < text.index("#### Resource changes")
    assert "| update | ClusterQueue | `research-team-vision-cq` |" in text
    assert "Summary: 1 to update." in text
    assert "##### cohort `research` (shared-pool): 2 quota value(s) changed" in text
    assert "<summary>cohort `serving` (inference-training): quotas unchanged</summary>" in text


def test_quota_change_alone_is_not_unchanged_and_settings_errors_are_shown():
    text = document.render("staging", "b", _report(), document.QuotaSide(tuple(_tables(_lower_vision_gpu))))
    assert "#### Quotas" in text and "no changes" not in text
    text = document.render("staging", "b", _report(errors=["boom"]),
                           document.QuotaSide((), after_error="invalid stack config: 1 problem"))
    assert "**The preview failed:**" in text and "> boom" in text
    assert "**The stack file does not validate**" in text and "invalid stack config: 1 problem" in text


def test_preview_not_run_is_said():
    text = document.render("dev", "b", _report(ran=False, note="preview skipped"), document.QuotaSide(()))
    assert "Not run: preview skipped" in text and "no changes" not in text


def test_an_invalid_stack_file_is_never_no_violations():
    """A preview that ran over a program that stopped at its settings check reports no violation: the summary says
    nothing was judged, after the CAUTION alert."""
    text = document.render("staging", "b", _report(),
                           document.QuotaSide((), after_error="invalid stack config: 1 problem"))
    assert "No policy violations" not in text
    assert text.index("> [!CAUTION]") < text.index("Not judged: the stack file does not validate") < \
        text.index("#### Resource changes")
