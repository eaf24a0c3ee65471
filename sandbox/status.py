"""``python -m sandbox status``: which components are up, then the cohorts view of the sandbox.

The process-health lines are the sandbox's own; the cohort part (per cohort, ClusterQueue and resource: quotas,
usage, borrowed, lent; Workloads; latest preemptions) is ``python -m cohorts status`` on the sandbox's cluster,
every cohort on it (one implementation: ``cohorts.cli.status_view``).
"""

from __future__ import annotations

from kubernetes import client as k8s

from cohorts.cli import status_view
from cohorts.live import ClusterUnreachable
from sandbox.cluster import Sandbox


def render(sandbox: Sandbox) -> tuple[str, bool]:
    """Return the status text and whether every component is healthy. The cohorts view is added only when the
    apiserver answers; a cluster without Kueue's API shows why instead."""
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
        try:
            lines += ["", status_view(api)]
        except ClusterUnreachable as exc:
            lines.append(f"cohorts: {exc}")
    return "\n".join(lines), all_ok
