"""The offline override of a stack document and loading it (pure)."""
from __future__ import annotations

from pathlib import Path

import yaml

from kueue_cohorts.components.settings.stackfile import read
from kueue_cohorts.prsummary import stackfile

ROOT = Path(__file__).resolve().parents[2]


def _doc(stack: str) -> dict:
    return read(ROOT / "stacks" / f"Pulumi.{stack}.yaml")


def test_offline_renders_and_takes_the_chart_from_the_go_module(tmp_path):
    doc = {**_doc("staging"), "encryptionsalt": "v1:abc"}
    out = stackfile.offline(doc, tmp_path / "r")
    config = out["config"]
    assert config["kueue-cohorts:cluster"] == {"mode": "render", "renderDir": str((tmp_path / "r").resolve())}
    assert config["kueue-cohorts:kueue"]["chartSource"] == "GoModule"
    assert config["kueue-cohorts:kueue"]["install"] is True
    assert out["encryptionsalt"] == "v1:abc"
    untouched = {k: v for k, v in config.items() if k not in ("kueue-cohorts:cluster", "kueue-cohorts:kueue")}
    assert untouched == {k: v for k, v in doc["config"].items() if k in untouched}
    assert doc["config"]["kueue-cohorts:cluster"]["mode"] == "kubeconfig", "the input is not modified"
    settings, error = stackfile.load(out)
    assert error is None and settings.cluster.mode.value == "render"


def test_offline_leaves_a_stack_without_kueue_install_alone(tmp_path):
    out = stackfile.offline(_doc("dev"), tmp_path)
    assert out["config"].get("kueue-cohorts:kueue") == _doc("dev")["config"].get("kueue-cohorts:kueue")


def test_engine_keys_are_carried_over_and_documents_round_trip():
    doc = _doc("prod")
    written = {"encryptionsalt": "v1:xyz", "config": {"other": 1}}
    merged = stackfile.with_engine_keys(doc, written)
    assert merged["encryptionsalt"] == "v1:xyz" and merged["config"] == doc["config"]
    assert yaml.safe_load(stackfile.dump(merged)) == merged
    assert stackfile.load(None) == (None, None)
    bad = {"config": {"kueue-cohorts:nodePools": []}}
    settings, error = stackfile.load(bad)
    assert settings is None and "kueue-cohorts:nodePools" in error
