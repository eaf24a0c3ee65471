"""Field paths as kubectl explains fields, for messages and for mapping a finding back to its config key.

Kept apart from `values.py` (which knows the pulumi-policy SDK's proxies) so that the program's pure layers can
name fields without loading the SDK.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Sequence


def format_path(parts: Sequence[Any]) -> str:
    """Render a property path the way kubectl explains fields: `spec.resourceGroups[0].flavors[1].name`.

    Args:
        parts: keys and indexes; indexes may be ints or digit strings (the SDK stores them as strings).
    Returns:
        The dotted path, e.g. "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota".
    """
    key = tuple(parts)
    try:
        return _format_cached(key)
    except TypeError:  # an unhashable part: format it without the cache
        return _format(key)


@lru_cache(maxsize=8192)
def _format_cached(parts: tuple[Any, ...]) -> str:
    """`_format`, remembered: a stack repeats the same few hundred paths over thousands of objects."""
    return _format(parts)


def _format(parts: tuple[Any, ...]) -> str:
    out = ""
    for part in parts:
        text = str(part)
        if isinstance(part, int) or text.isdigit():
            out += f"[{text}]"
        elif "/" in text or "." in text:
            out += f'["{text}"]'
        else:
            out += f".{text}" if out else text
    return out


_PART = re.compile(r'\["([^"]*)"\]|\[\'([^\']*)\'\]|\[(\d+)\]|\.?([^.\[]+)')


def parse_path(path: str) -> list[Any]:
    """The inverse of `format_path`: `spec.podSets[0].template["x/y"].name` -> ["spec", "podSets", 0,
    "template", "x/y", "name"]. Indexes come back as ints, quoted keys (double or single quotes) unquoted; a path
    may start with `.` or `[` (the rest of a longer path). Takes a str, returns the parts (empty for "")."""
    parts: list[Any] = []
    for match in _PART.finditer(path):
        quoted, single, index, name = match.groups()
        parts.append(int(index) if index is not None else (quoted if quoted is not None else
                                                            single if single is not None else name))
    return parts
