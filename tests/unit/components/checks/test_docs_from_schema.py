"""Each setting is documented once (its field docstring): the table of docs/configuration.md and the JSON Schema are
generated."""
from __future__ import annotations

import inspect
import json

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from kueue_cohorts.components import settings
from kueue_cohorts.components.checks import docs
from kueue_cohorts.components.settings import runtime as runtime_settings
from tests.helpers import ROOT, STACKS


def _models() -> list[type[BaseModel]]:
    return [c for module in (settings, runtime_settings) for c in vars(module).values()
            if inspect.isclass(c) and issubclass(c, BaseModel) and c.__module__ == module.__name__
            and c.model_fields]


def test_every_setting_has_its_own_description():
    undocumented = [f"{m.__name__}.{name}" for m in _models() for name, f in m.model_fields.items()
                    if not (f.description or "").strip()]
    assert undocumented == []


def test_the_configuration_table_and_the_json_schema_are_the_generated_ones():
    assert docs.main(["--check"]) == 0, "run: python -m kueue_cohorts.components.checks.docs --write"


def test_every_key_path_of_the_schema_is_a_row_of_the_table():
    keys = {row[0].strip("`") for row in docs.rows()}
    assert {"cluster.mode", "inferenceTraining.inference.borrowingLimit", "sharedPool.tenants[].floor",
            "trainingRuntime.numNodes", "kueue.resources.excludeResourcePrefixes"} <= keys
    table = docs.reference_table()
    assert all(f"| `{key}` |" in table for key in keys)


def test_a_changed_description_makes_the_configuration_page_stale(monkeypatch):
    field = settings.ClusterSettings.model_fields["mode"]
    monkeypatch.setattr(field, "description", "something else")
    assert docs.page_with_reference(docs.CONFIGURATION.read_text()) != docs.CONFIGURATION.read_text()
    assert docs.main(["--check"]) == 1


@pytest.mark.parametrize("stack", sorted(p.name for p in STACKS.glob("Pulumi.*.yaml")))
def test_the_json_schema_accepts_each_stack_file_and_refuses_a_typo(stack):
    schema = json.loads((ROOT / "schema" / "stack-config.schema.json").read_text())
    document = yaml.safe_load((STACKS / stack).read_text())
    jsonschema.validate(document, schema)
    document["config"]["kueue-cohorts:inferenceTrainig"] = {}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)


def test_pulumi_yaml_declares_the_keys_whose_absence_means_their_default():
    """Every declared key is a top-level setting whose default equals parsing the declared default; the keys left
    out are exactly the optional ones whose absence means something (a declared key without default is required)."""
    from kueue_cohorts.components.settings import Settings, config_keys

    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    declared = {key.split(":", 1)[1]: spec for key, spec in project["config"].items()}
    assert set(declared) <= set(config_keys())
    names = {f.alias or n: n for n, f in Settings.model_fields.items()}
    minimal = {"nodePools": [{"name": "p", "capacity": {"cpu": "1"}}]}
    for key, spec in declared.items():
        field = Settings.model_fields[names[key]]
        if "default" in spec:
            assert not field.is_required(), key
            with_default = Settings.model_validate({**minimal, key: spec["default"]})
            assert getattr(with_default, names[key]) == getattr(Settings.model_validate(minimal), names[key]), key
        else:
            assert field.is_required(), f"{key} has no default in Pulumi.yaml, which makes it required"
    undeclared = set(config_keys()) - set(declared)
    # nodePools is required by the settings check, not declared: a declared key without default is required by the
    # engine for every stack, including the test stacks of a single component
    assert undeclared == {"inferenceTraining", "sharedPool", "trainingRuntime", "resourceFlavors", "nodePools",
                          "previewIdentity", "whatif", "multiKueue"}
