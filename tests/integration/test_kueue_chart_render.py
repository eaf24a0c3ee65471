"""KueueInstallation through the real pulumi CLI in render mode: the Kueue chart of the pinned Go module is rendered
with exactly our manager Configuration, and an unsafe manageJobsWithoutQueueName setting stops the preview.

No cluster and no registry: chartSource GoModule (the chart directory shipped in sigs.k8s.io/kueue@<pin>) and
cluster mode render (the kubernetes provider writes the manifests to a directory, 0-crd/ and 1-manifest/).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pulumi import automation as auto

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.manager_config import manager_configuration
from tests.integration.project import Project, dump, manifests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

#: Non-default manager settings, so that the comparison shows the settings (not the defaults) reach the chart.
KUEUE = {
    "install": True,
    "chartSource": "GoModule",
    "namespace": "kueue-system",
    "manageJobsWithoutQueueName": True,
    # Selects every tenant namespace of the dev stack (they carry the queue label): promise 2 refuses a selector that
    # misses one (Kueue 0.19 ignores its jobs and pods, queue-named or not).
    "managedJobsNamespaceSelector": {"matchExpressions": [{"key": "kueue.x-k8s.io/queue", "operator": "Exists"}]},
    "waitForPodsReady": {"timeout": "7m", "recoveryTimeout": "3m",
                         "requeuingStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 30}},
    "integrations": ["batch/job", "trainer.kubeflow.org/trainjob", "deployment", "pod"],
    "featureGates": {"TopologyAwareScheduling": False},
}


def _rendered_config(target: Path) -> tuple[dict, dict]:
    """Return (the ConfigMap carrying controller_manager_config.yaml, that file parsed)."""
    found = [o for o in manifests(target)
             if o.get("kind") == "ConfigMap" and "controller_manager_config.yaml" in (o.get("data") or {})]
    assert len(found) == 1, f"expected one manager ConfigMap, got {[o['metadata']['name'] for o in found]}"
    return found[0], yaml.safe_load(found[0]["data"]["controller_manager_config.yaml"])


def test_chart_renders_exactly_the_configured_manager_settings(project: Project, tmp_path: Path):
    target = tmp_path / "rendered"
    project.render_to("dev", target)
    project.set_config("dev", "kueue", KUEUE)
    expected = manager_configuration(load_settings(project.config("dev")).kueue)

    stack = project.open("dev")
    result = stack.up(**project.kwargs(stack))
    assert result.summary.result == "succeeded", result.stdout

    configmap, rendered = _rendered_config(target)
    # Release name "kueue": the chart's objects carry the names of Kueue's released manifests.
    assert (configmap["metadata"]["name"], configmap["metadata"]["namespace"]) == ("kueue-manager-config",
                                                                                  "kueue-system")
    # The chart adds only internalCertManagement (its own default, when the config does not set it):
    # manager/manager-config.yaml of the chart. Everything else is our Configuration, key for key.
    chart_default = rendered.pop("internalCertManagement")
    assert chart_default["enable"] is True, dump(chart_default)
    assert rendered == expected, dump({"rendered": rendered, "expected": expected})
    assert rendered["waitForPodsReady"]["requeuingStrategy"]["backoffLimitCount"] == 3
    assert rendered["managedJobsNamespaceSelector"] == KUEUE["managedJobsNamespaceSelector"]

    objs = manifests(target)
    crds = {o["metadata"]["name"] for o in objs if o.get("kind") == "CustomResourceDefinition"}
    assert {"clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"} <= crds
    managers = [o for o in objs if o.get("kind") == "Deployment" and o["metadata"]["namespace"] == "kueue-system"]
    assert [o["metadata"]["name"] for o in managers] == ["kueue-controller-manager"]
    assert managers[0]["spec"]["replicas"] >= 1, "render mode has no out-of-cluster manager: the chart's runs"
    # The cohort is rendered in the same up, after the chart (its CRDs are in the same render).
    cqs = {o["metadata"]["name"] for o in objs if o.get("kind") == "ClusterQueue"}
    assert cqs == {"c12-inference-cq", "c12-training-cq"}


@pytest.mark.parametrize("selector", [
    None,  # manageJobsWithoutQueueName true with no selector: Kueue would suspend every job in the cluster
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kueue-system"]}]},
], ids=["no-selector", "selector-keeps-kube-system"])
def test_unsafe_manage_jobs_without_queue_name_fails_preview_with_the_reason(project: Project, tmp_path: Path,
                                                                            selector):
    target = tmp_path / "rendered"
    project.render_to("dev", target)
    kueue = {"install": True, "chartSource": "GoModule", "manageJobsWithoutQueueName": True}
    if selector is not None:
        kueue["managedJobsNamespaceSelector"] = selector
    project.set_config("dev", "kueue", kueue)

    stack = project.open("dev")
    with pytest.raises(auto.CommandError) as failed:
        stack.preview(**project.kwargs(stack))
    text = str(failed.value)
    assert "kueue-cohorts:kueue.managedJobsNamespaceSelector" in text, text
    assert "with manageJobsWithoutQueueName true, Kueue suspends every job it selects" in text, text
    assert "kube-system" in text, text
    assert not target.exists() or not list(target.rglob("*.yaml")), "nothing may be rendered when settings fail"
