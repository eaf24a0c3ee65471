"""kueue-cohorts on a live cluster: ``python -m kueue_cohorts.cohorts status|verify|report|monitoring --stack NAME``.

- ``status``: per cohort, ClusterQueue and resource, nominalQuota / borrowingLimit / lendingLimit against what is
  used, borrowed and lent right now; the admitted and pending Workloads; the latest preemptions with their reason,
  victim, preemptor and time (``cohorts.view`` reads, ``cohorts.render`` prints).
- ``verify``: the live cluster against the stack's rendered objects (``cohorts.expected``), as a list of differences
  naming kind, name and field path (``cohorts.verify``).
- ``report``: per queue and resource, the hours owned, used, borrowed and lent, preemptions, admission wait and
  training steps lost over a window, from the Prometheus HTTP API (``cohorts.report``).
- ``monitoring``: the stack's alerts (PrometheusRule, rules file) and Grafana dashboard (JSON, ConfigMap) as files,
  offline (``components.model.alerts``, ``components.model.dashboard``).

The cluster is the stack's (``kueue-cohorts:cluster``: the sandbox, or a kubeconfig and context), see
``cohorts.target``. Nothing here writes to the cluster.
"""
