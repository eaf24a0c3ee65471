"""Facts derived from one value (an object's properties, a selector), computed once per judgement of a stack.

Several rules read the same derived facts: every role-aware rule and WORKLOAD_PRIORITY_CLASS walk each object's
label sets, and five rules parse each ClusterQueue's namespaceSelector. `book.run` judges a stack inside `judging()`:
there each fact is computed once per value and remembered until the scope ends. Outside a scope (the policy pack's
per-resource calls, unit tests calling a rule directly) nothing is remembered, so a caller that changes a value
between two calls always sees the change. Within a scope the values are never changed (the rules only read them).

Values are remembered by identity (`id`), with a reference kept until the scope ends so that an id cannot be reused
by another value meanwhile; a value computed from an unhashable map (a dict, the SDK's proxy) is found again
without hashing or walking it.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Any, Callable, Hashable, Iterable, Iterator, Optional, Sequence, TypeVar

T = TypeVar("T")

Memory = dict[tuple[str, Hashable], tuple[Any, Any, list[Any]]]
#: The memory of the `judging()` scope being run in this context (thread, task), else None.
_MEMORY: contextvars.ContextVar[Optional[Memory]] = contextvars.ContextVar("kueue_cohorts_memo", default=None)
#: The notes of the `noting()` scope being run in this context, else None.
_NOTES: contextvars.ContextVar[Optional[list[Any]]] = contextvars.ContextVar("kueue_cohorts_notes", default=None)


@contextmanager
def noting() -> Iterator[list[Any]]:
    """A scope that collects what `note` is given meanwhile (nested scopes each collect their own, and hand theirs
    to the enclosing one when they end). Yields the list of notes, complete when the scope ends.

    Used by the rule book for values unknown at preview: a shared fact (an index of queues, the roles, a
    namespace's labels) that leaves an object out because one of its values is unknown notes the fail-closed
    finding, and the rule that used the fact reports it (`book.judge`), even when the fact was computed earlier for
    another rule (`once` and `once_over` replay the notes of a fact with it)."""
    outer = _NOTES.get()
    notes: list[Any] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)
        if outer is not None:
            outer.extend(notes)


def note(item: Any) -> None:
    """Hand `item` to the enclosing `noting()` scope; nothing outside one."""
    notes = _NOTES.get()
    if notes is not None:
        notes.append(item)


def renote(items: Iterable[Any]) -> None:
    """`note` each of `items` again (a cached fact served once more: `computed`)."""
    notes = _NOTES.get()
    if notes is not None:
        notes.extend(items)


def computed(compute: Callable[[], T]) -> tuple[T, list[Any]]:
    """`compute()` and the notes it made (also handed on to the enclosing `noting()` scope): for a cache of a fact
    outside `once`, which must `note` them again each time it serves the fact (`renote`)."""
    notes = _NOTES.get()
    if notes is None:
        return compute(), []
    start = len(notes)  # the scope's list only grows meanwhile (a nested scope hands its notes on when it ends)
    result = compute()
    return result, notes[start:]


@contextmanager
def judging() -> Iterator[None]:
    """A scope in which `once` remembers what it computes (a nested scope shares the outer one's memory; each
    thread or task has its own). The memory is dropped when the outermost scope ends, also on an exception."""
    if _MEMORY.get() is not None:
        yield
        return
    token = _MEMORY.set({})
    try:
        yield
    finally:
        _MEMORY.reset(token)


def active() -> bool:
    """True inside `judging()`."""
    return _MEMORY.get() is not None


def once(fact: str, value: Any, compute: Callable[[], T]) -> T:
    """`compute()`, the fact named `fact` about `value`: computed on the first call for this `value` (by identity)
    within a `judging()` scope and returned again on every later call there; computed on every call outside one.

    Args:
        fact: the fact's name ("label_sets", "requirements"), so several facts of one value are kept apart.
        value: what the fact is about (kept alive until the scope ends).
        compute: computes the fact from `value`; an exception it raises propagates and nothing is remembered. The
            notes it makes (`note`) are remembered with the fact and made again on every later call.
    Returns:
        The fact; callers must not modify it (it is shared by every later caller in the scope).
    """
    return _recall((fact, id(value)), value, compute)


def once_over(fact: str, values: Sequence[Any], compute: Callable[[], T]) -> T:
    """`once` for a fact about several values together (an index over a stack's objects): remembered for the same
    values in the same order (by identity), whichever list holds them.

    Args:
        fact: the fact's name. values: the values (kept alive until the scope ends). compute: computes the fact.
    Returns:
        The fact; callers must not modify it.
    """
    return _recall((fact, tuple(map(id, values))), list(values), compute)


def _recall(key: Any, keep: Any, compute: Callable[[], T]) -> T:
    """The fact remembered under `key` in the current scope (its notes made again), else `compute()`'s, remembered
    with `keep` (the value or values the key names by identity, held alive until the scope ends). Outside a scope,
    `compute()` every time."""
    memory = _MEMORY.get()
    if memory is None:
        return compute()
    hit = memory.get(key)
    if hit is not None:
        result: T = hit[1]
        if hit[2]:
            renote(hit[2])
        return result
    result, notes = computed(compute)
    memory[key] = (keep, result, notes)
    return result


def replay(fact: str, value: Any, walk: Callable[[], Iterable[T]]) -> Iterator[T]:
    """Iterate `walk()` (a walk over `value`) once per value within a `judging()` scope: the first iteration walks
    and records, later ones replay the same items in the same order and then raise the same exception where the walk
    raised one (an UnknownValueError after the items before it). Outside a scope, `walk()` is iterated directly.

    Args:
        fact: the walk's name. value: what it walks (kept alive until the scope ends). walk: makes the iterator.
    Yields:
        The walk's items (shared: callers must not modify them).
    Raises:
        Whatever the walk raised, after the items it yielded first.
    """
    if _MEMORY.get() is None:
        yield from walk()
        return
    items, error = once(fact, value, lambda: _record(walk))
    yield from items
    if error is not None:
        raise error


def _record(walk: Callable[[], Iterable[T]]) -> tuple[list[T], Optional[Exception]]:
    """Every item of `walk()` and the exception that ended it (None when it ran to its end)."""
    items: list[T] = []
    try:
        for item in walk():
            items.append(item)
    except Exception as err:  # replayed by `replay` after the same items (an UnknownValueError at preview)
        return items, err
    return items, None
