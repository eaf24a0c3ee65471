"""Names used more than once in a stack file: the one helper the settings rules and the MultiKueue rules share to
report a repeat at its own key with the key of its first use."""
from __future__ import annotations

from typing import Any, Iterable


def repeats(items: Iterable[tuple[Any, tuple[Any, ...]]]) -> list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]]:
    """(name, key parts of the repeat, key parts of the first use) for every name (any hashable) used more than
    once."""
    first: dict[Any, tuple[Any, ...]] = {}
    out = []
    for name, parts in items:
        if name in first:
            out.append((name, parts, first[name]))
        else:
            first[name] = parts
    return out
