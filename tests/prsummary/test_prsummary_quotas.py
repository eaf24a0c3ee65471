"""Quota snapshots and their comparison, from the pure plans of the real stack files."""
from __future__ import annotations

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.prsummary import quotas
from tests.helpers import stack_raw


def _snap(raw: dict) -> dict:
    return quotas.snapshot(load_settings(raw))


def test_same_stack_has_no_changed_cell():
    for stack in ("dev", "staging", "prod"):
        tables = quotas.compare(_snap(stack_raw(stack)), _snap(stack_raw(stack)))
        assert tables and not any(t.changed for t in tables), stack


def test_snapshot_follows_the_plans_of_the_staging_stack():
    snap = _snap(stack_raw("staging"))
    assert list(snap) == ["serving", "research"]
    serving = {q.name: q for q in snap["serving"].queues}
    assert serving["serving-inference-cq"].role == "inference"
    assert serving["serving-inference-cq"].quotas["nvidia.com/gpu"] == {
        "nominalQuota": "4", "borrowingLimit": "0", "lendingLimit": None}
    assert serving["serving-training-cq"].quotas["nvidia.com/gpu"] == {
        "nominalQuota": "0", "borrowingLimit": "4", "lendingLimit": None}
    speech = {q.name: q for q in snap["research"].queues}["team-speech-cq"]
    assert speech.quotas["nvidia.com/gpu"]["lendingLimit"] == "1"


def test_floor_change_marks_the_floor_and_the_neighbour_borrowing_limit_it_derives():
    # A tenant's default borrowingLimit is pool total - floor, so lowering team-vision's GPU floor 2 -> 1 shrinks
    # the pool to 3 and team-speech's derived borrowingLimit 2 -> 1; team-vision's own stays 3 - 1 = 2.
    before = stack_raw("staging")
    after = stack_raw("staging")
    after["sharedPool"]["tenants"][0]["floor"]["nvidia.com/gpu"] = "1"
    tables = {t.cohort: t for t in quotas.compare(_snap(before), _snap(after))}
    assert not tables["serving"].changed
    assert tables["research"].changed_cells() == {
        ("team-vision-cq", "nvidia.com/gpu", "nominalQuota"),
        ("team-speech-cq", "nvidia.com/gpu", "borrowingLimit"),
    }
    row = next(r for r in tables["research"].rows if (r.queue, r.resource) == ("team-vision-cq", "nvidia.com/gpu"))
    assert (row.cells["nominalQuota"].before, row.cells["nominalQuota"].after) == ("2", "1")


def test_added_and_removed_queues_are_absent_on_one_side():
    before = stack_raw("staging")
    after = stack_raw("staging")
    after["sharedPool"]["tenants"][1]["name"] = "team-audio"
    del after["sharedPool"]["tenants"][1]["lendingLimit"]
    table = {t.cohort: t for t in quotas.compare(_snap(before), _snap(after))}["research"]
    added = [r for r in table.rows if r.queue == "team-audio-cq"]
    removed = [r for r in table.rows if r.queue == "team-speech-cq"]
    assert added and all(not c.present_before and c.present_after for r in added for c in r.cells.values())
    assert removed and all(c.present_before and not c.present_after for r in removed for c in r.cells.values())
    assert [r.queue for r in table.rows][-1] == "team-speech-cq"  # rows only present before come last


def test_new_stack_and_removed_cohort():
    snap = _snap(stack_raw("staging"))
    new = quotas.compare({}, snap)
    assert all(t.changed for t in new) and all(t.after is not None for t in new)
    only_serving = {"serving": snap["serving"]}
    gone = {t.cohort: t for t in quotas.compare(snap, only_serving)}
    assert gone["research"].after is None and gone["research"].changed and not gone["serving"].changed


def test_quantities_compare_by_value_not_by_spelling():
    assert not quotas.Cell("16Gi", "17179869184").changed
    assert quotas.Cell("16Gi", "17Gi").changed
    assert quotas.Cell(None, "1").changed and quotas.Cell("1", None).changed
    assert not quotas.Cell(None, None).changed
    assert quotas.Cell(None, None, present_before=False).changed


def test_cohort_object_quota_is_a_row():
    raw = stack_raw("staging")
    raw["sharedPool"]["cohortQuota"] = {"cpu": "2"}
    snap = _snap(raw)
    cohort_rows = [q for q in snap["research"].queues if q.role == quotas.COHORT_ROLE]
    assert [(q.name, q.quotas["cpu"]["nominalQuota"]) for q in cohort_rows] == [("research", "2")]


def test_a_stack_with_two_gpu_types_shows_every_flavor_in_tables_and_diagram():
    from kueue_cohorts.prsummary.diagram import render_diagram
    from kueue_cohorts.prsummary.tables import render_table

    before = stack_raw("mixed")
    after = stack_raw("mixed")
    after["inferenceTraining"]["inference"]["flavors"][1]["nominalQuota"]["nvidia.com/gpu"] = "1"
    [table] = quotas.compare(_snap(before), _snap(after))
    assert table.changed_cells() == {
        ("mixed-inference-cq", "nvidia.com/gpu [a100]", "nominalQuota"),
        ("mixed-training-cq", "nvidia.com/gpu [a100]", "borrowingLimit")}  # training borrows inference's a100 quota
    rows = [(r.queue, r.resource) for r in table.rows if r.queue == "mixed-training-cq"]
    assert [res for _, res in rows] == ["cpu [h100]", "memory [h100]", "nvidia.com/gpu [h100]",
                                        "cpu [a100]", "memory [a100]", "nvidia.com/gpu [a100]"]
    assert "`nvidia.com/gpu [a100]`" in render_table(table)
    diagram = render_diagram(table.after, table.changed_cells())
    assert "gpu [h100]" in diagram and "gpu [a100]" in diagram
