"""`kueue-cohorts:monitoring`: the Prometheus alerts and the Grafana dashboard generated from the stack, their
thresholds and where they go (components/model/alerts.py, components/model/dashboard.py)."""
from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from kueue_cohorts.components.settings.base import _PATTERNS, DnsLabel, GoDuration, LabelKey, Model
from kueue_cohorts.components.settings.runtime import WholeNumber
from kueue_cohorts.policy.rules.vocabulary import durations

# --- alerts and dashboard --------------------------------------------------------------------------------------------

RUNBOOK_URL = "docs/monitoring.md"
"""The page whose "Runbook" section each alert links (`#kueuecohorts<alert>`, GitHub's heading anchors): this
project's monitoring page, relative; a team sets the address where its copy is served."""
_RUNBOOK = r"^\S+$"
_PATTERNS[_RUNBOOK] = ("must be a URL or path without spaces",
                       "write the page's address, e.g. https://git.example.com/platform/kueue-cohorts/docs/monitoring.md")


def _positive_duration(text: str) -> str:
    if durations.parse_go_duration(text) <= 0:
        raise ValueError("must be a positive duration Fix: write it with units, such as 90s, 5m or 1h")
    return text


PositiveDuration = Annotated[GoDuration, AfterValidator(_positive_duration)]
"""A positive Go duration (GoDuration above 0), turned into whole seconds in the rendered PromQL."""


class MonitoringSettings(Model):
    """`kueue-cohorts:monitoring`: the Prometheus alerts and the Grafana dashboard generated from the stack
    (`kueue-cohorts monitoring --stack NAME --out DIR`), their thresholds and where they go."""

    namespace: DnsLabel = "monitoring"
    """Namespace of the PrometheusRule and of the dashboard ConfigMap (kube-prometheus' namespace). Default
    monitoring."""
    rule_labels: dict[LabelKey, Annotated[str, Field(max_length=63)]] = Field(default_factory=dict)
    """Labels of the PrometheusRule and of the dashboard ConfigMap, for the operator's ruleSelector, e.g.
    {release: kube-prometheus-stack}. Default none."""
    kueue_job: Annotated[str, Field(min_length=1)] = "kueue"
    """The Prometheus `job` label of Kueue's manager metrics (the scrape job, or the Service a ServiceMonitor
    selects, e.g. kueue-controller-manager-metrics-service). The manager-down alert watches `up{job=<this>}`. Default
    kueue (the sandbox's job)."""
    inference_admission_wait: PositiveDuration = "1m"
    """Longest wait of an inference Workload for admission: an inference ClusterQueue with a pending Workload for
    longer, or whose 95th percentile admission wait over 10 minutes is longer, alerts
    (KueueCohortsInferenceAdmissionWait). Default 1m."""
    training_preemptions: WholeNumber = Field(default=3, ge=0)
    """Preemptions of a training ClusterQueue's Workloads within trainingPreemptionWindow above which it alerts
    (KueueCohortsTrainingPreemptedOften). Default 3."""
    training_preemption_window: PositiveDuration = "1h"
    """The window the training preemptions are counted in. Default 1h."""
    headroom_for: PositiveDuration = "15m"
    """How long a ClusterQueue may use more than its nominalQuota with no borrowing headroom left before it alerts
    (KueueCohortsQueueWithoutHeadroom). Default 15m."""
    runbook_url: Annotated[str, Field(pattern=_RUNBOOK)] = RUNBOOK_URL
    """The page with the runbook; each alert links `<this>#<alert name in lower case>`. Default docs/monitoring.md
    (this project's monitoring page, relative): set the address where your team serves it."""
