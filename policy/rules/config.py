"""The policy pack config: its schema and the options table of policy/README.md, both derived from the declarations.

CrossGuard config is per policy (`pulumi preview --policy-pack-config file.json`, format
`{"<policy>": {"enforcementLevel": "...", "<option>": ...}}`); the engine fills in each `default` and validates the
result against these schemas before the pack runs (pulumi `pkg/resource/analyzer/config.go`
`ReconcilePolicyPackConfig`). Each option is declared once, with its policy (`vocabulary/declaration.py` `Option`);
an option several policies declare (the ClusterQueue roles, the priority classes) is one object, documented once.
"""
from __future__ import annotations

from typing import Any

from .book import RULES
from .vocabulary.declaration import Option

SCHEMAS: dict[str, dict[str, dict[str, Any]]] = {rule.name: rule.schema() for rule in RULES}
"""Policy name -> its options' JSON schemas (pulumi-policy `PolicyConfigSchema.properties`), for every policy."""

START, END = "<!-- pack-options:start -->", "<!-- pack-options:end -->"
"""The markers around the generated options table in policy/README.md."""


def options() -> list[tuple[Option[Any], list[str]]]:
    """Every option of the pack once, in book order of first declaration, with the policies that declare it."""
    found: dict[int, tuple[Option[Any], list[str]]] = {}
    for rule in RULES:
        for option in rule.options:
            found.setdefault(id(option), (option, []))[1].append(rule.name)
    return list(found.values())


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(option: Option[Any]) -> str:
    if option.default in ([], {}):
        return "empty"
    return f"`{option.default}`"


def options_table() -> str:
    """The options table of policy/README.md (markdown, with the START/END markers): one row per option, the
    policies that take it, its type, default and meaning, from the declarations."""
    lines = [START, "", "| option | policies | type | default | meaning |", "|---|---|---|---|---|"]
    for option, names in options():
        policies = ", ".join(f"`{name}`" for name in names)
        lines.append(f"| `{option.key}` | {policies} | {option.type_text} | {_default(option)} | {_cell(option.doc)} |")
    return "\n".join(lines + ["", END])


def readme_with_options(text: str) -> str:
    """`text` (policy/README.md) with its options table replaced by the generated one. Raises ValueError without
    the markers."""
    before, start, rest = text.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"policy/README.md has no {START} ... {END} block")
    return before + options_table() + after
