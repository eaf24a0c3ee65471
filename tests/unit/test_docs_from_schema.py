"""Each setting is documented once (its field docstring): the README table and the JSON Schema are generated."""
from __future__ import annotations

import inspect
import json

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from components import docs, runtime_settings, settings
from tests.helpers import ROOT, STACKS


def _models() -> list[type[BaseModel]]:
    return [c for module in (settings, runtime_settings) for c in vars(module).values()
            if inspect.isclass(c) and issubclass(c, BaseModel) and c.__module__ == module.__name__
            and c.model_fields]


def test_every_setting_has_its_own_description():
    undocumented = [f"{m.__name__}.{name}" for m in _models() for name, f in m.model_fields.items()
                    if not (f.description or "").strip()]
    assert undocumented == []


def test_the_readme_table_and_the_json_schema_are_the_generated_ones():
    assert docs.main(["--check"]) == 0, "run: python -m components.docs --write"


def test_every_key_path_of_the_schema_is_a_row_of_the_table():
    keys = {row[0].strip("`") for row in docs.rows()}
    assert {"cluster.mode", "inferenceTraining.inference.borrowingLimit", "sharedPool.tenants[].floor",
            "trainingRuntime.numNodes", "kueue.resources.excludeResourcePrefixes"} <= keys
    table = docs.reference_table()
    assert all(f"| `{key}` |" in table for key in keys)


def test_a_changed_description_makes_the_readme_stale(monkeypatch):
    field = settings.ClusterSettings.model_fields["mode"]
    monkeypatch.setattr(field, "description", "something else")
    assert docs.readme_with_reference(docs.README.read_text()) != docs.README.read_text()


@pytest.mark.parametrize("stack", sorted(p.name for p in STACKS.glob("Pulumi.*.yaml")))
def test_the_json_schema_accepts_each_stack_file_and_refuses_a_typo(stack):
    schema = json.loads((ROOT / "schema" / "stack-config.schema.json").read_text())
    document = yaml.safe_load((STACKS / stack).read_text())
    jsonschema.validate(document, schema)
    document["config"]["kueue-cohorts:inferenceTrainig"] = {}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)
