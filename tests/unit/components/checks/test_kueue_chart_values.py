"""Issue 29 item 7: `kueue.values`, a Helm values passthrough for Kueue's chart, checked against the pinned chart's
values.yaml (Kueue v0.19.2 `charts/kueue`, no values.schema.json), reaching the Chart under the program's own values,
and never a way around the rule book (managerConfig, controllerManager.featureGates)."""
from __future__ import annotations

import json

import pytest
import yaml

from kueue_cohorts.components.checks.chart_values import ROUTED, chart_defaults, merged, value_problems
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.manager_config import manager_configuration
from kueue_cohorts.components.settings import KueueSettings
from kueue_cohorts.components.settings.errors import SettingsError
from tests.helpers import run_main, stack_raw

K = "kueue-cohorts:kueue.values"
GOOD = {"enableKueueViz": True,
        "controllerManager": {"replicas": 2, "nodeSelector": {"pool": "system"},
                              "manager": {"image": {"repository": "mirror.example/kueue/kueue", "tag": "v0.19.2"},
                                          "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}},
        "kueueViz": {"backend": {"image": {"repository": "mirror.example/kueue/kueueviz-backend"}}}}


def _problems(values: dict, install: bool = True) -> list[tuple[str, str]]:
    raw = stack_raw("dev")
    raw["kueue"] = {"install": install, "chartSource": "GoModule", "values": values}
    try:
        load_settings(raw)
    except SettingsError as err:
        return [(p.key, p.fix) for p in err.problems]
    return []


def test_the_chart_knows_the_values_the_issue_names():
    defaults = chart_defaults()
    assert value_problems(GOOD, defaults) == []
    assert _problems(GOOD) == []


@pytest.mark.parametrize("values, key, fix", [
    ({"enableKueuViz": True}, f"{K}.enableKueuViz", "did you mean 'enableKueueViz'? Rename the key"),
    ({"controllerManager": {"replica": 2}}, f"{K}.controllerManager.replica",
     "did you mean 'replicas'? Rename the key"),
    ({"controllerManager": {"replicas": "two"}}, f"{K}.controllerManager.replicas", "write a whole number"),
    ({"enableKueueViz": "yes"}, f"{K}.enableKueueViz", "write true or false"),
    ({"controllerManager": {"manager": {"image": {"tag": 19}}}}, f"{K}.controllerManager.manager.image.tag",
     "write a string"),
    ({"managerConfig": {"controllerManagerConfigYaml": "manageJobsWithoutQueueName: true"}}, f"{K}.managerConfig",
     ROUTED[("managerConfig",)]),
    ({"controllerManager": {"featureGates": [{"name": "FairSharingPreemptWithinNominal", "enabled": False}]}},
     f"{K}.controllerManager.featureGates", ROUTED[("controllerManager", "featureGates")]),
])
def test_a_value_the_chart_does_not_take_or_that_bypasses_the_rules_is_refused_at_its_key(values, key, fix):
    assert _problems(values) == [(key, fix)]


def test_values_need_the_chart_installed():
    assert _problems({"enableKueueViz": True}, install=False) == [
        ("kueue-cohorts:kueue.values", "set kueue.install: true, or remove kueue.values")]


def test_the_values_reach_the_chart_under_the_programs_own():
    raw = stack_raw("dev")
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    raw["kueue"] = {"install": True, "chartSource": "Published", "values": GOOD}
    mocks = run_main({f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()})
    (chart,) = [r.inputs for r in mocks.registered if r.typ == "kubernetes:helm.sh/v4:Chart"]
    values = chart["values"]
    assert values["enableKueueViz"] is True and values["controllerManager"]["replicas"] == 2
    assert values["controllerManager"]["manager"]["image"]["repository"] == "mirror.example/kueue/kueue"
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config == manager_configuration(KueueSettings(install=True))


def test_merge_keeps_ours_and_theirs():
    assert merged({"a": {"b": 1}, "c": 2}, {"a": {"b": 0, "d": 3}, "e": 4}) == {"a": {"b": 1, "d": 3}, "c": 2, "e": 4}
