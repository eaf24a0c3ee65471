"""The stack-file keys that select something outside the stack file (a file, a kubeconfig, a context, the target),
enumerated from the schema: every field marked `Selecting` (components/settings/base.py), wherever it is nested.

A key path is a tuple of the stack file's own names: the top-level key without the `kueue-cohorts:` prefix, then
camelCase field names, with `LIST` for "every item of this list" (e.g. `("multiKueue", "workers", LIST,
"kubeconfig")`). deploy/pullrequest.py pins each of them in the live preview of a pull request.
"""
from __future__ import annotations

import types
import typing
from typing import Any, Iterator, Union

from pydantic import BaseModel

from kueue_cohorts.components.settings.base import Selecting, Selects
from kueue_cohorts.components.settings.root import Settings

LIST = "[]"
"""The key-path step for every item of a list."""
MAPPING = "{}"
"""The key-path step for every value of a mapping."""

KeyPath = tuple[str, ...]


def _inner(annotation: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The models reachable through `annotation` (Optional, Union, list, dict, Annotated unwrapped), each with the
    key-path steps that lead into it (LIST, MAPPING)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield from _inner(typing.get_args(annotation)[0])
    elif origin in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _inner(arg)
    elif origin in (list, tuple, set, frozenset):
        for arg in typing.get_args(annotation):
            yield from (((LIST, *steps), model) for steps, model in _inner(arg))
    elif origin is dict:
        yield from (((MAPPING, *steps), model) for steps, model in _inner(typing.get_args(annotation)[1]))
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield (), annotation


def _marker(metadata: list[Any], annotation: Any) -> Selecting | None:
    found = [m for m in metadata if isinstance(m, Selecting)]
    if typing.get_origin(annotation) is typing.Annotated:
        found += [m for m in typing.get_args(annotation)[1:] if isinstance(m, Selecting)]
    return found[0] if found else None


def fields(model: type[BaseModel] = Settings, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Any, Selecting | None]]:
    """Every field of `model` and of the models nested in it: (key path, annotation, its Selecting marker or None),
    depth first in declaration order."""
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        yield path, info.annotation, _marker(list(info.metadata), info.annotation)
        for steps, inner in _inner(info.annotation):
            yield from fields(inner, (*path, *steps))


def selecting_keys(model: type[BaseModel] = Settings) -> dict[KeyPath, Selects]:
    """Every key path of `model` (default the whole stack config) marked `Selecting`, with what it selects."""
    return {path: marker.what for path, _, marker in fields(model) if marker is not None}


def key_text(path: KeyPath) -> str:
    """`path` as the docs write it: `kueue-cohorts:multiKueue.workers[].kubeconfig`."""
    text = f"kueue-cohorts:{path[0]}"
    for step in path[1:]:
        text += step if step in (LIST, MAPPING) else f".{step}"
    return text
