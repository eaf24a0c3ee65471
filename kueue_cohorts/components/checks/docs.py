"""The configuration reference and the stack-file JSON Schema, generated from the settings schema.

Each setting's meaning, unit and default is written once, as the docstring of its field in
`components/settings.py` / `components/settings/runtime.py` (pydantic `use_attribute_docstrings`). From those:
- the configuration table of `docs/configuration.md` (between `<!-- config-reference:start -->` and
  `<!-- config-reference:end -->`);
- `schema/stack-config.schema.json`, a JSON Schema of `stacks/Pulumi.<stack>.yaml` for editors (the YAML language
  server: `# yaml-language-server: $schema=../schema/stack-config.schema.json`).

`python -m kueue_cohorts.components.checks.docs --write` rewrites both; `python -m kueue_cohorts.components.checks.docs
--check` exits 1 when
either is stale,
or when a relative link or `#anchor` of the documentation (README.md, docs/*.md, the packages' own pages) does not
resolve (the tests run the same checks).

The link check reads the Markdown the pages use, as GitHub renders it (CommonMark fenced code; ATX headings; the
anchor of a heading is github-slugger's: lower case, punctuation dropped, spaces to `-`, `-1`, `-2` for repeats).
What it cannot judge (reference-style links, setext headings, HTML anchors, an anchor into a file that is not
Markdown) is reported as a problem, never passed.
"""
from __future__ import annotations

import argparse
import enum
import json
import re
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union
from urllib.parse import unquote

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.components.settings import PROJECT, Settings

ROOT = PROJECT_ROOT
CONFIGURATION = ROOT / "docs" / "configuration.md"
SCHEMA = ROOT / "schema" / "stack-config.schema.json"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"
PAGE_GLOBS = ("*.md", "docs/*.md", "kueue_cohorts/policy/*.md", "kueue_cohorts/trainer/*.md", "examples/*/*.md")
"""The documentation whose links `--check` judges, relative to the project root."""


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
    """The configuration table of docs/configuration.md (markdown, with the START/END markers)."""
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


def page_with_reference(text: str) -> str:
    """`text` (docs/configuration.md) with its configuration table replaced by the generated one. Raises ValueError
    without the markers."""
    before, start, rest = text.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"docs/configuration.md has no {START} ... {END} block")
    return before + reference_table() + after


_FENCE = re.compile(r"^ *(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)  # never across a blank line
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Page:
    """One Markdown page as GitHub shows it: `anchors` its headings' ids, `links` (line, target) of every inline link
    and image outside code, `unsupported` (line, construct) the page uses that this reader cannot judge."""

    anchors: frozenset[str]
    links: tuple[tuple[int, str], ...]
    unsupported: tuple[tuple[int, str], ...]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading (github-slugger 2.0 `slug`: code spans and link text keep their words, lower
    case, every character that is not a letter, digit, `_`, `-` or space dropped, spaces to `-`)."""
    text = _CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = _LINK.sub(lambda m: m.group(1), text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def read_page(text: str) -> Page:
    """The anchors, links and unsupported constructs of Markdown `text` (see the module docstring for the subset);
    lines inside fenced code count for nothing."""
    anchors: list[str] = []
    seen: dict[str, int] = {}
    unsupported: list[tuple[int, str]] = []
    prose: list[str] = []
    fence = ""
    previous = ""
    for number, line in enumerate(text.split("\n"), start=1):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip().lstrip(fence[0]):
                fence = ""
            prose.append("")
            previous = ""
            continue
        if opening:
            fence = opening.group(1)
            prose.append("")
            previous = ""
            continue
        prose.append(line)
        heading = _HEADING.match(line)
        if heading:
            base = slug(heading.group(2) or "")
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.append(base if count == 0 else f"{base}-{count}")
        elif _SETEXT.match(line) and previous.strip() and not previous.lstrip().startswith(("|", "-", "*", ">")):
            unsupported.append((number, "a setext heading (underlined with = or -): write it as `## heading`"))
        if _REFERENCE.match(line):
            unsupported.append((number, "a reference-style link definition: write the link inline, [text](target)"))
        if _HTML_ANCHOR.search(line):
            unsupported.append((number, "an HTML anchor: link to a heading instead"))
        previous = line
    body = "\n".join(prose)
    body = _CODE_SPAN.sub(lambda m: "\n" * m.group(0).count("\n"), body)
    links = tuple((body.count("\n", 0, m.start()) + 1, m.group(2)) for m in _LINK.finditer(body))
    return Page(frozenset(anchors), links, tuple(unsupported))


def link_problems(root: Path = ROOT, pages: Optional[Iterable[Path]] = None) -> list[str]:
    """Every relative link or `#anchor` of `pages` (default: PAGE_GLOBS under `root`) that does not resolve, as
    `path:line: target: why` lines; also every construct a page uses that this check cannot judge. Links with a
    scheme (https:, mailto:) are not followed. Empty when all is well."""
    root = root.resolve()
    paths = sorted(set(pages) if pages is not None else {p for g in PAGE_GLOBS for p in root.glob(g) if p.is_file()})
    read: dict[Path, Page] = {}

    def page(path: Path) -> Page:
        if path not in read:
            read[path] = read_page(path.read_text())
        return read[path]

    problems: list[str] = []
    for path in paths:
        name = path.resolve().relative_to(root)
        problems += [f"{name}:{line}: {what}" for line, what in page(path.resolve()).unsupported]
        for line, target in page(path.resolve()).links:
            where = f"{name}:{line}: {target or '(empty)'}"
            if not target:
                problems.append(f"{where}: an empty link target")
                continue
            if _SCHEME.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.resolve().parent / unquote(file_part)).resolve() if file_part else path.resolve()
            if linked != root and root not in linked.parents:
                problems.append(f"{where}: points outside the repository")
            elif not linked.exists():
                problems.append(f"{where}: no such file or directory")
            elif anchor and (linked.is_dir() or linked.suffix != ".md"):
                problems.append(f"{where}: an anchor into a file that is not Markdown cannot be checked")
            elif anchor and unquote(anchor) not in page(linked).anchors:
                problems.append(f"{where}: {linked.relative_to(root)} has no heading with the anchor #{anchor}")
    return problems


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m kueue_cohorts.components.checks.docs --write | --check`. Exit 0 up to date (or written), 1 stale,
    2 usage."""
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m kueue_cohorts.components.checks.docs",
                                     description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true",
                      help="rewrite the docs/configuration.md table and the JSON Schema")
    mode.add_argument("--check", action="store_true", help="exit 1 when either is stale or a link does not resolve")
    args = parser.parse_args(argv)
    page = page_with_reference(CONFIGURATION.read_text())
    schema = json.dumps(stack_file_schema(), indent=2) + "\n"
    if args.write:
        CONFIGURATION.write_text(page)
        SCHEMA.parent.mkdir(exist_ok=True)
        SCHEMA.write_text(schema)
        return 0
    stale = [str(path.relative_to(ROOT)) for path, text in ((CONFIGURATION, page), (SCHEMA, schema))
             if not path.exists() or path.read_text() != text]
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m kueue_cohorts.components.checks.docs --write", file=sys.stderr)
    broken = link_problems()
    for problem in broken:
        print(f"broken link: {problem}", file=sys.stderr)
    return 1 if stale or broken else 0


if __name__ == "__main__":
    sys.exit(main())
