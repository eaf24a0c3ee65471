"""The configuration reference and the stack-file JSON Schema, generated from the settings schema.

Each setting's meaning, unit and default is written once, as the docstring of its field in
`components/settings/` / `components/settings/runtime.py` (pydantic `use_attribute_docstrings`). From those:
- the README's configuration table (between `<!-- config-reference:start -->` and `<!-- config-reference:end -->`);
- `schema/stack-config.schema.json`, a JSON Schema of `stacks/Pulumi.<stack>.yaml` for editors (the YAML language
  server: `# yaml-language-server: $schema=../schema/stack-config.schema.json`).

`python -m components.checks.docs --write` rewrites both; `python -m components.checks.docs --check` exits 1 when
either is stale
(the tests run the same comparison).
"""
from __future__ import annotations

import argparse
import enum
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from components.settings import PROJECT, Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCHEMA = ROOT / "schema" / "stack-config.schema.json"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _base(annotation: Any) -> Any:
    annotation = _strip_optional(annotation)
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _member_model(annotation: Any) -> Optional[type[BaseModel]]:
    """The model `annotation` is, or the model member of a union of a model and scalars (an env value)."""
    annotation = _base(annotation)
    union = typing.get_origin(annotation) in (Union, types.UnionType)
    members = typing.get_args(annotation) if union else (annotation,)
    for member in members:
        member = _base(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    return None


def _model_of(annotation: Any) -> tuple[Optional[type[BaseModel]], str]:
    """(the model a field holds, "" when it is one, "[]" when a list of them, ".<name>" when a map of them)."""
    annotation = _base(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        item = _base(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item, "[]"
    if typing.get_origin(annotation) is dict:
        model = _member_model(typing.get_args(annotation)[1])
        if model is not None:
            return model, ".<name>"
    return None, ""


def type_name(annotation: Any) -> str:
    """A short reader's name of a field's type: `int`, `string`, `Create \\| Label \\| External`, `resource list`."""
    annotation = _base(annotation)
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{member.value}`" for member in annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{value}`" for value in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    if origin is list:
        model, _ = _model_of(annotation)
        return "list of objects" if model else f"list of {type_name(typing.get_args(annotation)[0])}"
    if origin is dict and _member_model(typing.get_args(annotation)[1]) is not None:
        return "map of string \\| object"
    if origin is dict:
        key, value = typing.get_args(annotation)
        if "Quantity" in str(value) or "canonical" in str(value):
            return "resource list"
        return "map"
    return {str: "string", int: "int", float: "number (seconds)", bool: "bool"}.get(annotation, "string")


def default_text(field: FieldInfo) -> str:
    """The default as YAML-ish text, `required` for required fields, `—` for an omitted optional one."""
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    if value is None or value is PydanticUndefined:
        return "—"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, enum.Enum):
        value = value.value
    if value in ({}, []):
        return "empty"
    return f"`{json.dumps(value)}`"


def rows(model: type[BaseModel] = Settings, prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, default, description) for every field, depth first, in schema order."""
    for name, field in model.model_fields.items():
        key = f"{prefix}.{field.alias or name}" if prefix else (field.alias or name)
        text = " ".join((field.description or "").split()).replace("|", "\\|")
        yield f"`{key}`", type_name(field.annotation), default_text(field), text
        nested, suffix = _model_of(field.annotation)
        if nested is not None:
            yield from rows(nested, key + suffix)


def reference_table() -> str:
    """The README's configuration table (markdown, with the START/END markers)."""
    lines = [START, "", "| key | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| {k} | {t} | {d} | {m} |" for k, t, d, m in rows()]
    return "\n".join(lines + ["", END])


def stack_file_schema() -> dict[str, Any]:
    """A JSON Schema of a stack file: `config` holds the `kueue-cohorts:*` keys of the Settings schema (typos
    refused) and any other namespace's keys (kubernetes:, pulumi:)."""
    schema = Settings.model_json_schema(by_alias=True)
    definitions = schema.pop("$defs", {})
    properties = {f"{PROJECT}:{key}": value for key, value in schema["properties"].items()}
    known = sorted(properties)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "kueue-cohorts stack file (stacks/Pulumi.<stack>.yaml)",
        "type": "object",
        "properties": {
            "encryptionsalt": {"type": "string"},
            "config": {
                "type": "object",
                "properties": properties,
                "required": [f"{PROJECT}:{key}" for key in schema.get("required", [])],
                "propertyNames": {"anyOf": [{"enum": known}, {"not": {"pattern": f"^{PROJECT}:"}}]},
            },
        },
        "$defs": definitions,
    }


def readme_with_reference(text: str) -> str:
    """`text` (the README) with its configuration table replaced by the generated one. Raises ValueError without
    the markers."""
    before, start, rest = text.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"README.md has no {START} ... {END} block")
    return before + reference_table() + after


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m components.checks.docs --write | --check`. Exit 0 up to date (or written), 1 stale, 2 usage."""
    parser = argparse.ArgumentParser(prog="python -m components.checks.docs", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the README table and the JSON Schema")
    mode.add_argument("--check", action="store_true", help="exit 1 when either is stale")
    args = parser.parse_args(argv)
    readme = readme_with_reference(README.read_text())
    schema = json.dumps(stack_file_schema(), indent=2) + "\n"
    if args.write:
        README.write_text(readme)
        SCHEMA.parent.mkdir(exist_ok=True)
        SCHEMA.write_text(schema)
        return 0
    stale = [str(path.relative_to(ROOT)) for path, text in ((README, readme), (SCHEMA, schema))
             if not path.exists() or path.read_text() != text]
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m components.checks.docs --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
