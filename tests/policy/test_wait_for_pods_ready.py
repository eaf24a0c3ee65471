"""kueue-manager-config: every waitForPodsReady value Kueue's manager refuses to start with is refused at its field
(Kueue 0.19.2 pkg/config/validation.go validateWaitForPodsReady; issue 26 item 9)."""
from __future__ import annotations

import pytest
import yaml

from kueue_cohorts.policy.rules.kueue_manager_config import check_kueue_manager_config
from tests.policy.fixtures import SAFE_MANAGER_CONFIG, kube, kueue_config_map

PREFIX = "data['controller_manager_config.yaml'].waitForPodsReady"


def _judge(wait: dict) -> list:
    config = yaml.safe_load(SAFE_MANAGER_CONFIG)
    config["waitForPodsReady"] = {"timeout": "10m", **wait}
    return check_kueue_manager_config(kube("kueue-config", kueue_config_map(yaml.safe_dump(config))))


@pytest.mark.parametrize("value", ["-1m", "-1ns", "-2h30m", "-.5s", "-0.001s"])
def test_a_negative_recovery_timeout_is_refused(value):
    [v] = _judge({"recoveryTimeout": value})
    assert (v.field, v.value) == (f"{PREFIX}.recoveryTimeout", value)
    assert v.rule == (f"waitForPodsReady.recoveryTimeout: {value!r} is negative, and Kueue's manager refuses to start "
                      "with it")
    assert v.fix == ("set a positive Go duration such as 10m, 0s to switch the recovery timeout off, or leave it out "
                     "(it then equals timeout)")


@pytest.mark.parametrize(("value", "why"), [("1d", "is not a Go duration (time: unknown unit"),
                                            ("5", "is not a Go duration (time: missing unit"),
                                            (300, "is not a Go duration string")])
def test_a_recovery_timeout_that_is_no_go_duration_is_refused(value, why):
    [v] = _judge({"recoveryTimeout": value})
    assert v.field == f"{PREFIX}.recoveryTimeout" and why in v.rule


@pytest.mark.parametrize("wait", [{"recoveryTimeout": "0s"}, {"recoveryTimeout": "-0s"}, {"recoveryTimeout": "3m"},
                                  {}, {"requeuingStrategy": {"timestamp": "Creation", "backoffLimitCount": 0,
                                                             "backoffBaseSeconds": 0, "backoffMaxSeconds": 0}}])
def test_what_kueue_accepts_passes(wait):
    assert _judge(wait) == []


@pytest.mark.parametrize(("field", "value", "fix"), [
    ("timestamp", "Now", "set Eviction (the default) or Creation"),
    ("timestamp", "eviction", "set Eviction (the default) or Creation"),
    ("backoffLimitCount", -1, "set a whole number from 0 to 2147483647"),
    ("backoffLimitCount", 1.5, "set a whole number from 0 to 2147483647"),
    ("backoffBaseSeconds", -60, "set a whole number from 0 to 2147483647"),
    ("backoffMaxSeconds", 2**31, "set a whole number from 0 to 2147483647"),
    ("backoffMaxSeconds", "1h", "set a whole number from 0 to 2147483647"),
])
def test_a_requeuing_strategy_the_manager_refuses_is_refused(field, value, fix):
    [v] = _judge({"requeuingStrategy": {field: value}})
    assert (v.field, v.value, v.fix) == (f"{PREFIX}.requeuingStrategy.{field}", value, fix)
    assert "Kueue's manager refuses to start with it" in v.rule
