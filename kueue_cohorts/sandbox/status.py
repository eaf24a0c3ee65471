"""``kueue-cohorts sandbox status``: which components are up, then the cohorts view of the sandbox.

The process-health lines are the sandbox's own; the cohort part (per cohort, ClusterQueue and resource: quotas,
usage, borrowed, lent; Workloads; latest preemptions) is ``kueue-cohorts status --all`` on the sandbox's cluster
(one implementation: ``cohorts.cli.cohorts_section``). The sandbox sits below ``cohorts`` (which reads the sandbox's
kubeconfig and Prometheus), so that view is handed in as ``cohorts_view`` by the front door (``kueue_cohorts.cli``);
``python -m kueue_cohorts.sandbox status`` shows the components only.
"""

from __future__ import annotations

from typing import Callable, Optional

from kubernetes import client as k8s

from kueue_cohorts.sandbox.cluster import Sandbox

#: The cohorts view of the cluster behind an ApiClient, as text (``cohorts.cli.cohorts_section``).
CohortsView = Callable[[k8s.ApiClient], str]


def render(sandbox: Sandbox, cohorts_view: Optional[CohortsView] = None) -> tuple[str, bool]:
    """Return the status text and whether every component is healthy. ``cohorts_view`` (None: left out) is added
    only when the apiserver answers."""
    lines = [f"state dir: {sandbox.paths.root}", f"kubeconfig: {sandbox.paths.kubeconfig}"]
    st = sandbox.state()
    health = sandbox.health()
    width = max(len("component"), *(len(name) for name in health))
    lines.append(f"{'component':<{width}} {'pid':>7}  {'version':<8} health")
    for name, (running, ok, detail) in health.items():
        rec = st.processes.get(name)
        pid = str(rec.pid) if rec and running else "-"
        version = st.versions.get(name, "")
        verdict = "DOWN" if not ok else "ok" if running else "off"  # off: healthy by not running (CRDsOnly Trainer)
        lines.append(f"{name:<{width}} {pid:>7}  {version:<8} {verdict} ({detail[:60]})")
    all_ok = all(ok for _, ok, _ in health.values())
    if health["kube-apiserver"][1]:
        api = sandbox._client()
        nodes = k8s.CoreV1Api(api).list_node().items
        ready = sum(
            1 for n in nodes
            if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions if n.status else None) or [])
        )
        lines.append(f"nodes: {ready}/{len(nodes)} Ready")
        if cohorts_view is not None:
            lines += ["", cohorts_view(api)]
    return "\n".join(lines), all_ok
