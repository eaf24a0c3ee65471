"""Pure: the stack's Grafana dashboard, built with Grafana's dashboards-as-code SDK (issue 31 item 3).

Built with grafana-foundation-sdk (PyPI, the Python builders generated from Grafana 11.6's schema; pinned in
requirements.txt) rather than hand-written JSON. Shipped two ways by `python -m kueue_cohorts.cohorts monitoring`: the
dashboard
JSON file, and a ConfigMap carrying it with the label the Grafana sidecar of kube-prometheus-stack watches
(`grafana_dashboard: "1"`).

Per cohort of the stack (a row each):
- per covered resource, each ClusterQueue's nominalQuota, reserved, used and borrowed (reserved above nominal) per
  flavor over time (kueue_cluster_queue_nominal_quota, _resource_reservation, _resource_usage);
- the inference admission wait, 50th and 95th percentile (kueue_admission_wait_time_seconds; every queue's in a
  layout without inference);
- pending Workloads per ClusterQueue and status (kueue_pending_workloads);
- evictions with their reason and underlying cause (kueue_evicted_workloads_total), and the preemptions each
  queue's Workloads made with their reason, InCohortReclamation among them (kueue_preempted_workloads_total);
- training's accelerator-hours held over the dashboard's range (reservation integrated per minute), and the steps
  lost at the last preemption and the checkpoint age its trainer reports (trainer/metrics.py).

Every query is a `PanelQuery`, so a test can run each against a real Prometheus; the only Grafana variables in them
are `$__rate_interval` and `$__range` (and the `datasource` variable that picks the Prometheus).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus as gp
from grafana_foundation_sdk.builders import stat as gs
from grafana_foundation_sdk.builders import timeseries as gt
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from kueue_cohorts.components.model.alerts import label_matcher
from kueue_cohorts.components.model.plans import CohortPlan, stack_plans
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.quoting import promql_string
from kueue_cohorts.policy.rules.vocabulary.objects import INFERENCE_ROLE, PART_OF_LABELS, TRAINING_ROLE

DASHBOARD_LABEL = ("grafana_dashboard", "1")
"""The label kube-prometheus-stack's Grafana sidecar looks for on ConfigMaps (its `sidecar.dashboards.label` and
`labelValue` defaults)."""
NOT_ACCELERATORS = ("cpu", "memory", "ephemeral-storage", "pods")
"""Covered resources that are not accelerators (the rest, e.g. nvidia.com/gpu, count as accelerator-hours)."""
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")


@dataclass(frozen=True)
class PanelQuery:
    """One PromQL query of a panel: `expr` (may hold $__rate_interval and $__range), `legend` (Grafana legend
    format), `instant` (a stat's one value instead of a range)."""

    panel: str
    expr: str
    legend: str
    instant: bool = False


@dataclass(frozen=True)
class PanelSpec:
    """One panel: its title, kind ("timeseries" or "stat"), unit (Grafana unit id) and queries."""

    title: str
    kind: str
    unit: str
    queries: tuple[PanelQuery, ...]
    description: str = ""


def accelerators(covered: list[str]) -> list[str]:
    """The accelerator resources among `covered` (every one but NOT_ACCELERATORS and hugepages-*)."""
    return [r for r in covered if r not in NOT_ACCELERATORS and not r.startswith("hugepages-")]


def _covered(plan: CohortPlan) -> list[str]:
    return list(dict.fromkeys(r for cq in plan.cluster_queues for g in cq.resource_groups for r in g.covered_resources))


def cohort_panels(settings: Settings, plan: CohortPlan) -> list[PanelSpec]:
    """The panels of one cohort (see the module docstring), in display order."""
    c = plan.cohort
    panels: list[PanelSpec] = []
    for resource in _covered(plan):
        sel = f"cohort={promql_string(c)}, resource={promql_string(resource)}"
        title = f"{c}: {resource} per ClusterQueue"
        by = "max by (cluster_queue, flavor)"
        nominal = f"{by} (kueue_cluster_queue_nominal_quota{{{sel}}})"
        reserved = f"{by} (kueue_cluster_queue_resource_reservation{{{sel}}})"
        panels.append(PanelSpec(title, "timeseries", "short", (
            PanelQuery(title, nominal, "{{cluster_queue}} {{flavor}} nominal"),
            PanelQuery(title, reserved, "{{cluster_queue}} {{flavor}} reserved"),
            PanelQuery(title, f"{by} (kueue_cluster_queue_resource_usage{{{sel}}})",
                       "{{cluster_queue}} {{flavor}} used"),
            PanelQuery(title, f"clamp_min({reserved} - {nominal}, 0)", "{{cluster_queue}} {{flavor}} borrowed"),
        ), f"nominalQuota, reserved, used and borrowed (reserved above nominal) of {resource} in cohort {c}"))
    inference = [cq.name for cq in plan.cluster_queues if cq.role == INFERENCE_ROLE]
    waiting = inference or [cq.name for cq in plan.cluster_queues]
    title = f"{c}: {'inference ' if inference else ''}admission wait"
    buckets = (f"sum by (le, cluster_queue) (rate(kueue_admission_wait_time_seconds_bucket"
               f"{{cluster_queue{label_matcher(waiting)}}}[$__rate_interval]))")
    panels.append(PanelSpec(title, "timeseries", "s", (
        PanelQuery(title, f"histogram_quantile(0.5, {buckets})", "{{cluster_queue}} p50"),
        PanelQuery(title, f"histogram_quantile(0.95, {buckets})", "{{cluster_queue}} p95"),
    ), "Time from a Workload's creation (or requeue) to its admission"))
    queues = f"cluster_queue{label_matcher([cq.name for cq in plan.cluster_queues])}"
    title = f"{c}: pending Workloads"
    panels.append(PanelSpec(title, "timeseries", "short", (
        PanelQuery(title, f"sum by (cluster_queue, status) (kueue_pending_workloads{{{queues}}})",
                   "{{cluster_queue}} {{status}}"),)))
    title = f"{c}: evictions and preemptions by reason"
    panels.append(PanelSpec(title, "timeseries", "short", (
        PanelQuery(title, f"sum by (cluster_queue, reason, underlying_cause) "
                          f"(increase(kueue_evicted_workloads_total{{{queues}}}[$__rate_interval]))",
                   "{{cluster_queue}} evicted: {{reason}} {{underlying_cause}}"),
        PanelQuery(title, f"sum by (preempting_cluster_queue, reason) (increase(kueue_preempted_workloads_total"
                          f"{{preempting_{queues}}}[$__rate_interval]))",
                   "{{preempting_cluster_queue}} preempted others: {{reason}}"),),
        "Workloads evicted per interval by reason (Preempted: a victim's side), and the preemptions each queue's "
        "Workloads made by reason (InCohortReclamation: inference taking its nominal quota back)"))
    training = [cq.name for cq in plan.cluster_queues if cq.role == TRAINING_ROLE]
    accel = accelerators(_covered(plan))
    if training and accel:
        title = f"{c}: training accelerator-hours held"
        panels.append(PanelSpec(title, "stat", "short", (
            PanelQuery(title, f"sum by (cluster_queue, resource) (sum_over_time(max by (cluster_queue, resource) "
                              f"(kueue_cluster_queue_resource_reservation{{cluster_queue{label_matcher(training)}, "
                              f"resource{label_matcher(accel)}}})[$__range:1m])) / 60",
                       "{{cluster_queue}} {{resource}}", instant=True),),
            "Reserved accelerators integrated over the dashboard's time range, in resource-hours"))
    namespaces = sorted(ns for ns, _ in plan.checkpoints)
    if namespaces and settings.training_runtime is not None:
        title = f"{c}: training steps lost and checkpoint age"
        pods = f"namespace{label_matcher(namespaces)}"
        panels.append(PanelSpec(title, "timeseries", "short", (
            PanelQuery(title, "max by (namespace, pod) "
                              f"(kueue_cohorts_trainer_steps_lost_at_last_preemption{{{pods}}})",
                       "{{namespace}}/{{pod}} steps lost"),
            PanelQuery(title, f"max by (namespace, pod) (kueue_cohorts_trainer_checkpoint_age_seconds{{{pods}}})",
                       "{{namespace}}/{{pod}} checkpoint age (s)"),
        ), "What the trainer reports (trainer/metrics.py): steps redone after the last preemption, seconds of "
           "training not yet in a checkpoint"))
    return panels


def panels(settings: Settings) -> list[tuple[str, list[PanelSpec]]]:
    """(cohort, its panels) for every cohort of the stack, in the stack's order."""
    return [(plan.cohort, cohort_panels(settings, plan)) for plan in stack_plans(settings)]


def queries(settings: Settings) -> list[PanelQuery]:
    """Every query of the dashboard (for tests against a real Prometheus)."""
    return [q for _, specs in panels(settings) for spec in specs for q in spec.queries]


def _panel(spec: PanelSpec, panel_id: int) -> Any:
    builder: Any = gs.Panel() if spec.kind == "stat" else gt.Panel()
    builder = builder.id(panel_id).title(spec.title).unit(spec.unit).datasource(DATASOURCE).height(8).span(
        24 if spec.kind == "timeseries" and "per ClusterQueue" in spec.title else 12)
    if spec.description:
        builder = builder.description(spec.description)
    for ref, query in zip("ABCDEFGH", spec.queries, strict=False):
        target = gp.Dataquery().expr(query.expr).legend_format(query.legend).ref_id(ref).datasource(DATASOURCE)
        builder = builder.with_target(target.instant() if query.instant else target.range())
    return builder


def dashboard(settings: Settings, stack: str) -> dict[str, Any]:
    """The Grafana dashboard of the stack as JSON (dict): uid `kueue-cohorts-<stack>` (at most 40 characters), a
    `datasource` variable for the Prometheus, a row per cohort with its panels, panel ids 1, 2, ... in order."""
    board = (gd.Dashboard(f"kueue-cohorts {stack}: GPU cohorts")
             .uid(f"kueue-cohorts-{stack}"[:40])
             .tags(["kueue", "kueue-cohorts", stack])
             .description(f"Quota, usage, borrowing, admission wait and preemptions of the cohorts of stack {stack}, "
                          "generated from the stack (python -m kueue_cohorts.cohorts monitoring)")
             .time("now-24h", "now").refresh("1m").timezone("utc")
             .with_variable(gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus")))
    panel_id = 0
    for cohort, specs in panels(settings):
        panel_id += 1
        board = board.with_row(gd.Row(f"Cohort {cohort}").id(panel_id))
        for spec in specs:
            panel_id += 1
            board = board.with_panel(_panel(spec, panel_id))
    encoded: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True).encode(board.build()))
    return encoded


def config_map(settings: Settings, stack: str) -> dict[str, Any]:
    """The ConfigMap `kueue-cohorts-<stack>-dashboard` in `monitoring.namespace` carrying the dashboard JSON under
    `kueue-cohorts-<stack>.json`, labelled `grafana_dashboard: "1"` (the Grafana sidecar) and with
    `monitoring.ruleLabels`."""
    mon = settings.monitoring
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"kueue-cohorts-{stack}-dashboard", "namespace": mon.namespace,
                     "labels": {DASHBOARD_LABEL[0]: DASHBOARD_LABEL[1], **PART_OF_LABELS, **mon.rule_labels}},
        "data": {f"kueue-cohorts-{stack}.json": json.dumps(dashboard(settings, stack), indent=2, sort_keys=True)},
    }
