"""The figures of a reclaim's wait, standard library only (the settings layer imports them without the SDK).

Upstream: core/v1 PodSpec.terminationGracePeriodSeconds (default 30); Kubernetes v1.36.3
`pkg/kubelet/kuberuntime/kuberuntime_manager.go` `minimumGracePeriodInSeconds = 2` (what killContainer still gives a
container after its preStop hook). The rule that uses them: `reclaim_within_budget.py`.
"""
from __future__ import annotations

DEFAULT_GRACE_SECONDS = 30
"""core/v1 PodSpec.terminationGracePeriodSeconds default, in seconds."""
KUBELET_MINIMUM_SECONDS = 2
"""The least a container gets after its preStop hook, in seconds (kuberuntime `minimumGracePeriodInSeconds`)."""
DEFAULT_BUDGET_SECONDS = 60
"""The default reclaim budget, in seconds: the guide's terminationGracePeriodSeconds (its 30 s save plus one 5 s
step fit in it)."""
