"""Pure: the stack's Prometheus alerts, generated from its promises (issue 31 item 2).

Settings -> one rule group per stack, shipped two ways: a PrometheusRule (monitoring.coreos.com/v1, the
prometheus-operator CRD kube-prometheus installs; `prometheus_rule`) and a plain Prometheus rules file for a
Prometheus without the operator (`rules_file`). `python -m kueue_cohorts.cohorts monitoring` writes both; every
rendered file is
checked with the pinned promtool (`promtool check rules`, `promtool test rules`) in tests/unit/test_alerts.py.

The alerts, each naming its cohort and ClusterQueue and linking its section of the README's runbook
(`monitoring.runbookUrl` + `#<alert name in lower case>`):

- KueueCohortsInferencePending: an inference ClusterQueue has a pending Workload for longer than
  inferenceAdmissionWait (kueue_pending_workloads);
- KueueCohortsInferenceAdmissionWait: the 95th percentile admission wait of an inference ClusterQueue over 10m is
  above inferenceAdmissionWait (kueue_admission_wait_time_seconds);
- KueueCohortsInferenceBorrowing: an inference ClusterQueue reserves more than its nominalQuota, i.e. it borrows
  (kueue_cluster_queue_resource_reservation, kueue_cluster_queue_nominal_quota);
- KueueCohortsTrainingPreemptedOften: a training ClusterQueue's Workloads were preempted more than
  trainingPreemptions times in trainingPreemptionWindow (kueue_evicted_workloads_total{reason="Preempted"});
- KueueCohortsQueueWithoutHeadroom: a ClusterQueue of the stack reserves above its nominalQuota and is at its
  borrowingLimit, or its cohort is fully reserved, for headroomFor (kueue_cluster_queue_*, kueue_cohort_subtree_*);
- KueueCohortsKueueDown: no Kueue manager answers scrapes (job monitoring.kueueJob) for 2m (up);
- KueueCohortsKueueWebhookFailing: the API server fails to call one of Kueue's webhooks, which fail closed: the
  objects they guard are refused (apiserver_admission_webhook_rejection_count, Kubernetes 1.36
  k8s.io/apiserver/pkg/admission/metrics);
- KueueCohortsCheckpointStale: a training pod's newest checkpoint is older than the runtime's save interval plus
  one save (kueue_cohorts_trainer_checkpoint_age_seconds, trainer/metrics.py);
- KueueCohortsReclaimOverBudget: the 95th percentile time from admission to ready of an inference ClusterQueue's
  Workloads over 10m is above the reclaim budget (kueue_admitted_until_ready_wait_time_seconds). After a reclaim
  Kueue admits inference at once (a Job, JobSet or TrainJob victim releases its quota when its pods start
  terminating, KEP-6143), so this is the time inference waited for the victim to let its GPUs go: its grace period,
  preStop included (issue 37).
Kueue's metrics: Kueue v0.19.2 pkg/metrics/metrics.go.

`pod_monitor` renders the PodMonitor (monitoring.coreos.com/v1) that scrapes the trainer's own metrics on the
training pods' `metrics` port (components.model.runtime.METRICS_PORT).

Durations of the settings are Go durations; the rules carry them as whole seconds (`90s`), which Prometheus reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kueue_cohorts.components.model.plans import stack_plans
from kueue_cohorts.components.model.runtime import METRICS_LABEL
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.quoting import go_template_text as t
from kueue_cohorts.components.settings.quoting import promql_regex_alternatives, promql_string
from kueue_cohorts.policy.rules.vocabulary import durations
from kueue_cohorts.policy.rules.vocabulary.objects import INFERENCE_ROLE, PART_OF_LABELS, TENANT_ROLE, TRAINING_ROLE
from kueue_cohorts.policy.rules.vocabulary.reclaim import DEFAULT_BUDGET_SECONDS

API_VERSION = "monitoring.coreos.com/v1"
"""prometheus-operator's PrometheusRule group/version (kube-prometheus)."""
ADMISSION_WAIT_WINDOW = "10m"
"""The window of the admission-wait percentile (rate over the histogram's buckets)."""
KUEUE_DOWN_FOR = "2m"
WEBHOOK_WINDOW = "5m"
CHECKPOINT_STALE_FOR = "1m"
RECLAIM_WINDOW = "10m"
"""The window of the reclaim-wait percentile."""
RECLAIM_BUDGET_SECONDS = DEFAULT_BUDGET_SECONDS
"""The guide's reclaim budget in seconds (policy.rules.vocabulary.reclaim, the default of
`inferenceTraining.inference.reclaimBudgetSeconds`), for a stack without an inferenceTraining layout."""
KUEUE_WEBHOOKS = (
    "mappwrapper.kb.io", "mclusterqueue.kb.io", "mdeployment.kb.io", "mjaxjob.kb.io", "mjob.kb.io",
    "mleaderworkerset.kb.io", "mmpijob.kb.io", "mpaddlejob.kb.io", "mpod.kb.io", "mpytorchjob.kb.io",
    "mraycluster.kb.io", "mrayjob.kb.io", "mrayservice.kb.io", "mresourceflavor.kb.io", "msparkapplication.kb.io",
    "mstatefulset.kb.io", "mtfjob.kb.io", "mtrainjob.kb.io", "mworkload.kb.io", "mxgboostjob.kb.io",
    "vappwrapper.kb.io", "vclusterqueue.kb.io", "vcohort.kb.io", "vdeployment.kb.io", "vjaxjob.kb.io", "vjob.kb.io",
    "vleaderworkerset.kb.io", "vmpijob.kb.io", "vpaddlejob.kb.io", "vpod.kb.io", "vpytorchjob.kb.io",
    "vraycluster.kb.io", "vrayjob.kb.io", "vrayservice.kb.io", "vresourceflavor.kb.io", "vsparkapplication.kb.io",
    "vstatefulset.kb.io", "vtfjob.kb.io", "vtrainjob.kb.io", "vworkload.kb.io", "vxgboostjob.kb.io",
)
"""The webhook names of Kueue v0.19.2 (config/components/webhook/manifests.yaml), the `name` label of the API
server's admission metrics; mjobset.kb.io and vjobset.kb.io are left out: JobSet's own webhooks carry the same
names."""

_QUEUE = ("cohort", "cluster_queue", "flavor", "resource")
_COHORT = ("cohort", "flavor", "resource")


def seconds(duration: str) -> int:
    """A Go duration (settings) as whole seconds, rounded up (a threshold never shrinks). Raises ValueError on a
    malformed duration (the settings refuse it before)."""
    nanos = durations.parse_go_duration(duration)
    return -(-nanos // 1_000_000_000)


def _d(duration: str) -> str:
    return f"{seconds(duration)}s"


def label_matcher(names: list[str]) -> str:
    """A PromQL label matcher value: `="a"` for one name, `=~"a|b"` (names RE2-quoted) for several, each a PromQL
    string literal (components.settings.quoting)."""
    if len(names) == 1:
        return f"={promql_string(names[0])}"
    return f"=~{promql_regex_alternatives(names)}"


def _by(metric: str, labels: tuple[str, ...], selector: str) -> str:
    return f"max by ({', '.join(labels)}) ({metric}{{{selector}}})"


@dataclass(frozen=True)
class Alert:
    """One alerting rule of a Prometheus rule group (Prometheus docs, "Alerting rules": alert, expr, for, labels,
    annotations). `for_` None: fires at the first evaluation."""

    alert: str
    expr: str
    summary: str
    description: str
    labels: tuple[tuple[str, str], ...]
    runbook: str
    for_: Optional[str] = None

    def rule(self) -> dict[str, Any]:
        """The rule as Prometheus reads it (camelCase as in the rules file; `for` only when set)."""
        out: dict[str, Any] = {"alert": self.alert, "expr": self.expr}
        if self.for_:
            out["for"] = self.for_
        out["labels"] = {key: t(value) for key, value in self.labels}  # Prometheus expands label templates too
        out["annotations"] = {"summary": self.summary, "description": self.description,
                              "runbook_url": t(self.runbook)}
        return out


def runbook_anchor(alert: str) -> str:
    """The README heading anchor of `alert`'s runbook section: GitHub's anchors are the heading in lower case."""
    return alert.lower()


def alerts(settings: Settings, stack: str) -> list[Alert]:
    """Every alert of the stack (see the module table), in a stable order: per cohort its queues' alerts, then the
    stack-wide ones (Kueue down, webhooks failing, stale checkpoints).

    Takes the validated settings and the stack name (label `kueue_cohorts_stack` on every alert). Returns the
    alerts with their thresholds from `settings.monitoring`.
    """
    mon = settings.monitoring
    runbook = mon.runbook_url.split("#", 1)[0]

    def link(name: str) -> str:
        return f"{runbook}#{runbook_anchor(name)}"

    base = (("kueue_cohorts_stack", stack),)
    out: list[Alert] = []
    plans = stack_plans(settings)
    wait = seconds(mon.inference_admission_wait)
    for plan in plans:
        queues = {role: [cq.name for cq in plan.cluster_queues if cq.role == role]
                  for role in (INFERENCE_ROLE, TRAINING_ROLE, TENANT_ROLE)}
        for name in queues[INFERENCE_ROLE]:
            labels = (*base, ("cohort", plan.cohort), ("cluster_queue", name))
            cq = f"cluster_queue={promql_string(name)}"
            out.append(Alert(
                "KueueCohortsInferencePending",
                f"sum by (cluster_queue) (kueue_pending_workloads{{{cq}}}) > 0",
                f"Inference in {t(name)} has waited more than {wait} s for admission",
                f"ClusterQueue {t(name)} (cohort {t(plan.cohort)}) has had {{{{ $value }}}} pending Workload(s) for "
                f"more "
                f"than {mon.inference_admission_wait}: its quota is not coming back.",
                (*labels, ("severity", "critical")), link("KueueCohortsInferencePending"),
                _d(mon.inference_admission_wait)))
            out.append(Alert(
                "KueueCohortsInferenceAdmissionWait",
                f"histogram_quantile(0.95, sum by (le, cluster_queue) "
                f"(rate(kueue_admission_wait_time_seconds_bucket{{{cq}}}[{ADMISSION_WAIT_WINDOW}]))) > {wait}",
                f"Inference admission wait in {t(name)} is above {wait} s",
                f"The 95th percentile admission wait of ClusterQueue {t(name)} (cohort {t(plan.cohort)}) over "
                f"{ADMISSION_WAIT_WINDOW} is {{{{ $value | humanizeDuration }}}}, above "
                f"{mon.inference_admission_wait}.",
                (*labels, ("severity", "warning")), link("KueueCohortsInferenceAdmissionWait")))
            budget = reclaim_budget_seconds(settings)
            out.append(Alert(
                "KueueCohortsReclaimOverBudget",
                f"histogram_quantile(0.95, sum by (le, cluster_queue) "
                f"(rate(kueue_admitted_until_ready_wait_time_seconds_bucket{{{cq}}}[{RECLAIM_WINDOW}]))) > {budget}",
                f"Inference in {name} waits more than its reclaim budget of {budget} s for its pods",
                f"The 95th percentile time from admission to ready of ClusterQueue {name} (cohort {plan.cohort}) over "
                f"{RECLAIM_WINDOW} is {{{{ $value | humanizeDuration }}}}, above the reclaim budget of {budget} s: "
                "a borrowing trainer keeps inference's GPUs for longer than its grace period may (or a pod of "
                "another kind holds them).",
                (*labels, ("severity", "critical")), link("KueueCohortsReclaimOverBudget")))
            out.append(Alert(
                "KueueCohortsInferenceBorrowing",
                f"{_by('kueue_cluster_queue_resource_reservation', _QUEUE, cq)} > "
                f"{_by('kueue_cluster_queue_nominal_quota', _QUEUE, cq)}",
                f"Inference ClusterQueue {t(name)} borrows",
                f"ClusterQueue {t(name)} (cohort {t(plan.cohort)}) reserves {{{{ $value }}}} of "
                f"{{{{ $labels.resource }}}} "
                f"in flavor {{{{ $labels.flavor }}}}, above its nominalQuota: inference must never borrow (its "
                f"borrowingLimit must be 0), or training can take back what inference runs on.",
                (*labels, ("severity", "critical")), link("KueueCohortsInferenceBorrowing")))
        for name in queues[TRAINING_ROLE]:
            labels = (*base, ("cohort", plan.cohort), ("cluster_queue", name))
            window = _d(mon.training_preemption_window)
            out.append(Alert(
                "KueueCohortsTrainingPreemptedOften",
                f"sum by (cluster_queue) (increase(kueue_evicted_workloads_total{{cluster_queue={promql_string(name)}, "
                f'reason="Preempted"}}[{window}])) > {mon.training_preemptions}',
                f"Training in {t(name)} was preempted more than {mon.training_preemptions} times in {window}",
                f"Workloads of ClusterQueue {t(name)} (cohort {t(plan.cohort)}) were preempted {{{{ $value }}}} "
                f"times in "
                f"{mon.training_preemption_window}: each preemption costs a restart and up to one save interval.",
                (*labels, ("severity", "warning")), link("KueueCohortsTrainingPreemptedOften")))
        names = [cq.name for cq in plan.cluster_queues]
        sel = f"cluster_queue{label_matcher(names)}"
        reserved = _by("kueue_cluster_queue_resource_reservation", _QUEUE, sel)
        nominal = _by("kueue_cluster_queue_nominal_quota", _QUEUE, sel)
        limit = _by("kueue_cluster_queue_borrowing_limit", _QUEUE, sel)
        cohort_sel = f"cohort={promql_string(plan.cohort)}"
        cohort_full = (f"{_by('kueue_cohort_subtree_resource_reservations', _COHORT, cohort_sel)} >= "
                       f"{_by('kueue_cohort_subtree_quota', _COHORT, cohort_sel)}")
        out.append(Alert(
            "KueueCohortsQueueWithoutHeadroom",
            f"({reserved} > {nominal}) and (({reserved} >= {nominal} + {limit}) or "
            f"({reserved} and on (cohort, flavor, resource) ({cohort_full})))",
            f"A ClusterQueue of cohort {t(plan.cohort)} uses more than its nominalQuota with no headroom left",
            f"ClusterQueue {{{{ $labels.cluster_queue }}}} (cohort {t(plan.cohort)}) reserves {{{{ $value }}}} of "
            f"{{{{ $labels.resource }}}} in flavor {{{{ $labels.flavor }}}}, above its nominalQuota, and is at its "
            f"borrowingLimit or its cohort is fully reserved: its next Workload waits for a reclaim.",
            (*base, ("cohort", plan.cohort), ("severity", "warning")), link("KueueCohortsQueueWithoutHeadroom"),
            _d(mon.headroom_for)))
    cohorts = ",".join(plan.cohort for plan in plans)
    out.append(Alert(
        "KueueCohortsKueueDown", f"absent(up{{job={promql_string(mon.kueue_job)}}} == 1)",
        "Kueue's manager is down",
        f"No Kueue manager of job {t(mon.kueue_job)} answered a scrape for {KUEUE_DOWN_FOR}: nothing is admitted or "
        f"preempted in cohorts {t(cohorts)}, and Kueue's webhooks (failurePolicy Fail) refuse the pods and jobs of "
        "every "
        "namespace Kueue manages.",
        (*base, ("cohort", cohorts), ("severity", "critical")), link("KueueCohortsKueueDown"), KUEUE_DOWN_FOR))
    out.append(Alert(
        "KueueCohortsKueueWebhookFailing",
        f'sum by (name) (rate(apiserver_admission_webhook_rejection_count{{error_type="calling_webhook_error", '
        f'name{label_matcher(list(KUEUE_WEBHOOKS))}}}[{WEBHOOK_WINDOW}])) > 0',
        "The API server cannot call Kueue's webhook {{ $labels.name }}",
        f"Calls to Kueue's webhook {{{{ $labels.name }}}} fail ({{{{ $value }}}} per second over {WEBHOOK_WINDOW}): "
        f"it fails closed, so the objects it guards are refused in every namespace Kueue manages (cohorts "
        f"{t(cohorts)}).",
        (*base, ("cohort", cohorts), ("severity", "critical")), link("KueueCohortsKueueWebhookFailing")))
    runtime = settings.training_runtime
    training = sorted({ns for plan in plans for ns, _ in plan.checkpoints})
    if runtime is not None and training:
        interval = runtime.save_steps * runtime.seconds_per_step
        stale = int(-(-(interval + runtime.checkpoint_save_seconds) // 1))
        training_cohorts = ",".join(plan.cohort for plan in plans if plan.checkpoints)
        out.append(Alert(
            "KueueCohortsCheckpointStale",
            f"max by (namespace, pod) (kueue_cohorts_trainer_checkpoint_age_seconds"
            f"{{namespace{label_matcher(training)}}}) > {stale}",
            "Training pod {{ $labels.namespace }}/{{ $labels.pod }} has no checkpoint newer than its save interval",
            f"The newest checkpoint of {{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} is {{{{ $value }}}} s old, "
            f"more than the save interval ({runtime.save_steps} steps x {runtime.seconds_per_step:g} s) plus one "
            f"save ({runtime.checkpoint_save_seconds:g} s): a hard stop now loses more than the stack promises.",
            (*base, ("cohort", training_cohorts), ("severity", "warning")), link("KueueCohortsCheckpointStale"),
            CHECKPOINT_STALE_FOR))
    return out


def reclaim_budget_seconds(settings: Settings) -> int:
    """The inference side's reclaim budget in seconds: `inferenceTraining.inference.reclaimBudgetSeconds` (the field
    the settings check, the pack and the admission policy judge), else :data:`RECLAIM_BUDGET_SECONDS` for a stack
    without an inferenceTraining layout."""
    it = settings.inference_training
    return int(it.inference.reclaim_budget_seconds) if it is not None else RECLAIM_BUDGET_SECONDS


def pod_monitor(settings: Settings, stack: str) -> Optional[dict[str, Any]]:
    """The PodMonitor (monitoring.coreos.com/v1, prometheus-operator) `kueue-cohorts-<stack>-trainer` in
    `monitoring.namespace`, labelled like the PrometheusRule, scraping port `metrics` of every pod labelled
    `kueue-cohorts/metrics: trainer` in the training namespaces (every 30 s); None without a trainingRuntime or a
    training namespace."""
    plans = stack_plans(settings)
    training = sorted({ns for plan in plans for ns, _ in plan.checkpoints})
    if settings.training_runtime is None or not training:
        return None
    mon = settings.monitoring
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitor",
        "metadata": {"name": f"kueue-cohorts-{stack}-trainer", "namespace": mon.namespace,
                     "labels": {**PART_OF_LABELS, **mon.rule_labels}},
        "spec": {"selector": {"matchLabels": {METRICS_LABEL[0]: METRICS_LABEL[1]}},
                 "namespaceSelector": {"matchNames": training},
                 "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]},
    }


def rule_groups(settings: Settings, stack: str) -> list[dict[str, Any]]:
    """The stack's rule groups: one group `kueue-cohorts-<stack>` holding every alert of `alerts`."""
    return [{"name": f"kueue-cohorts-{stack}", "rules": [a.rule() for a in alerts(settings, stack)]}]


def rules_file(settings: Settings, stack: str) -> dict[str, Any]:
    """A Prometheus rules file (`rule_files:` of prometheus.yml): {"groups": rule_groups}."""
    return {"groups": rule_groups(settings, stack)}


def prometheus_rule(settings: Settings, stack: str) -> dict[str, Any]:
    """The PrometheusRule (monitoring.coreos.com/v1) `kueue-cohorts-<stack>` in `monitoring.namespace`, labelled with
    `monitoring.ruleLabels` (the operator's ruleSelector) and `app.kubernetes.io/part-of: kueue-cohorts`."""
    mon = settings.monitoring
    return {
        "apiVersion": API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {"name": f"kueue-cohorts-{stack}", "namespace": mon.namespace,
                     "labels": {**PART_OF_LABELS, **mon.rule_labels}},
        "spec": {"groups": rule_groups(settings, stack)},
    }
