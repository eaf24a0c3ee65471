"""The plain value behind the policy SDK's unknown-checking proxies, for `Violation.value`.

At preview the SDK wraps the properties in nested `pulumi_policy.proxy` `_DictProxy`/`_ListProxy` objects (see
`values.py`). A list proxy compares by identity, so a Violation whose `value` is a proxy would never equal the plain
dict a test or the settings check expects. `plain` rebuilds plain dicts and lists from the proxies' targets (values
unknown at preview stay as the SDK's sentinel strings). It never raises, never recurses (deep nesting is fine) and
keeps shared sub-values shared (a YAML alias bomb is copied in linear time).
"""
from __future__ import annotations

from typing import Any

from .values import is_list, is_map

__all__ = ["plain"]


def _target(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return value
    try:
        return value["__target"]
    except (KeyError, IndexError, TypeError):
        return value


def plain(value: Any) -> Any:
    """`value` with every dict/list proxy replaced by a plain dict/list (scalars and plain containers unchanged in
    content; containers that held proxies are rebuilt)."""
    if not (is_map(value) or is_list(value)):
        return value
    if isinstance(value, tuple):
        return value
    memo: dict[int, Any] = {}
    root_target = _target(value)
    # Build every container first (iteratively), then fill them.
    order: list[tuple[Any, Any]] = []
    pending = [root_target]
    while pending:
        source = pending.pop()
        if id(source) in memo:
            continue
        built: Any = {} if is_map(source) else []
        memo[id(source)] = built
        order.append((source, built))
        children = source.values() if isinstance(source, dict) else (
            [source[k] for k in source] if is_map(source) else list(source))
        for child in children:
            child = _target(child)
            if (is_map(child) or is_list(child)) and not isinstance(child, tuple) and id(child) not in memo:
                pending.append(child)
    for source, built in order:
        items = source.items() if isinstance(source, dict) else (
            [(k, source[k]) for k in source] if is_map(source) else enumerate(list(source)))
        for key, child in items:
            child = _target(child)
            converted = memo.get(id(child), child) if (is_map(child) or is_list(child)) else child
            if isinstance(built, dict):
                built[key] = converted
            else:
                built.append(converted)
    return memo[id(root_target)]
