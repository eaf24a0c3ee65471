"""Metrics on, from the stack (issue 31 item 1): the manager Configuration the stack renders turns on Kueue's
ClusterQueue resource gauges and LocalQueue metrics, `kueue.metrics` turns them off, and the sandbox's Kueue runs
with the same fields. The field names are read from the pinned Kueue's Go source (apis/config/v1beta2)."""
from __future__ import annotations

import re
from itertools import product
from pathlib import Path

import pytest
import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.model.manager_config import chart_values, manager_configuration
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.sandbox import kueue as sandbox_kueue
from tests.helpers import stack_raw

PORTS = {"kueue-webhook": 1, "kueue-health": 2, "kueue-metrics": 3}


def _kueue_source() -> Path:
    entry = toolchain.versions.load().entries["kueue"]
    return toolchain.module_dir(entry.module, entry.module_version)


def test_every_stack_turns_the_views_metrics_on():
    for stack in ("dev", "staging", "prod", "mixed"):
        metrics = manager_configuration(parse_settings(stack_raw(stack)).kueue)["metrics"]
        assert metrics == {"bindAddress": ":8443", "enableClusterQueueResources": True,
                           "localQueueMetrics": {"enable": True}}, stack


@pytest.mark.parametrize("cq, lq, selected", list(product([False, True], repeat=3)))  # all 8: exhaustive
def test_the_setting_turns_each_off(cq, lq, selected):
    raw = stack_raw("dev")
    local = {"enable": lq, **({"localQueueSelector": {"matchLabels": {"team": "a"}}} if selected else {})}
    raw["kueue"] = {"metrics": {"enableClusterQueueResources": cq, "localQueueMetrics": local}}
    settings = parse_settings(raw)
    metrics = manager_configuration(settings.kueue)["metrics"]
    assert metrics["enableClusterQueueResources"] is cq
    assert metrics["localQueueMetrics"] == local
    # the chart carries the same Configuration, and the sandbox's manager gets the same fields
    chart = yaml.safe_load(chart_values(settings.kueue)["managerConfig"]["controllerManagerConfigYaml"])
    assert chart["metrics"] == metrics
    sandbox = sandbox_kueue.configuration(PORTS, Path("/c"), metrics=settings.kueue.metrics)["metrics"]
    assert sandbox == {**metrics, "bindAddress": "127.0.0.1:3"}


def test_a_typo_under_metrics_is_refused_at_its_key():
    raw = stack_raw("dev")
    raw["kueue"] = {"metrics": {"enableClusterQueueResource": False, "localQueueMetrics": {"enabled": True}}}
    with pytest.raises(SettingsError) as err:
        parse_settings(raw)
    text = str(err.value)
    assert "kueue-cohorts:kueue.metrics.enableClusterQueueResource" in text
    assert "kueue-cohorts:kueue.metrics.localQueueMetrics.enabled" in text


def test_the_field_names_are_those_of_the_pinned_kueue():
    source = (_kueue_source() / "apis" / "config" / "v1beta2" / "configuration_types.go").read_text()
    controller = source[source.index("type ControllerMetrics struct"):]
    controller = controller[:controller.index("\n}\n")]
    local = source[source.index("type LocalQueueMetrics struct"):]
    local = local[:local.index("\n}\n")]
    tags = set(re.findall(r'json:"(\w+)', controller)) | set(re.findall(r'json:"(\w+)', local))
    rendered = manager_configuration(parse_settings(stack_raw("dev")).kueue)["metrics"]
    assert set(rendered) | set(rendered["localQueueMetrics"]) | {"localQueueSelector"} <= tags
    # MetricsForCohorts is the off switch of the cohort metrics, on by default in the pinned release
    gates = (_kueue_source() / "pkg" / "features" / "kube_features.go").read_text()
    assert re.search(r'MetricsForCohorts: \{\n\t\t\{Version: version\.MustParse\("0\.18"\), Default: true', gates)
