"""JudgedStack: a stack's settings plus the Pulumi inputs that replace some of its values, judged by the settings
check; the one thing every component registers its objects from.

The model (`components.model`) is pure and takes plain values; a user's program has Outputs (a Namespace's
`metadata.name`, a StorageClass's name, an image repository's URL) that are unknown while the program runs. A
JudgedStack renders the model twice:

1. at construction, with a *stand-in* in place of every Output: a plain text derived from the value's config key
   (`stand_in`, e.g. `input-inference-namespaces-0`). The settings check (`components.checks.validation.validate`,
   the program's own) judges the stack with the stand-ins, so every problem that does not depend on an Output's
   value is reported before anything registers, and the stand-in render fixes the objects, their kinds and the
   components' child names;
2. once every Output has resolved (`resolved`): the same check on the resolved values, raising `InvalidStack` (the
   deployment fails with the same message as the program's) or giving the assembled stack of the resolved values.
   Each object is registered with the manifest that render produced for it (same position in
   `AssembledStack.objects()`), field by field, through `pulumi.Output.apply`: what is registered is exactly what
   the check judged, with no text substituted into a manifest.

A stack without Outputs is rendered and judged once, and its objects are registered as plain manifests.

Upstream: `pulumi.Output.all` / `Output.apply` (Pulumi Python SDK 3.259.0, sdk/python/lib/pulumi/output.py): an apply
runs once every value is known, so in a preview where an Output is unknown the second check waits (the fields stay
unknown), and an exception raised in it fails the registration of every resource whose inputs wait for it.
"""
from __future__ import annotations

import copy
import hashlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar, Union, cast

import pulumi

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.assembly import AssembledStack, assemble
from kueue_cohorts.components.model.kueue import namespace_owner as owner_mark
from kueue_cohorts.components.model.render import KeyPath, Rendered
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.errors import Problem, SettingsError

T = TypeVar("T")

STAND_IN_PREFIX = "input-"
"""Every stand-in starts with this (a DNS-1123 label, so it passes as a namespace or an object name)."""

Inputs = Mapping[KeyPath, Any]
"""Config key path (without the `kueue-cohorts:` prefix, e.g. ("inferenceTraining", "inference", "namespaces")) ->
the value it takes instead of the stack's: a plain value, a `pulumi.Input`, or a list or mapping holding some."""

_FIXED_KEYS = ("apiVersion", "kind")


StackInput = Union[Settings, Mapping[str, Any], "JudgedStack"]
"""What a component's `stack` argument takes: a Settings, a mapping of stack-file keys (Outputs allowed in it) or a
JudgedStack (see `JudgedStack.of`)."""


def stack_settings_value(stack: StackInput, *path: str) -> Any:
    """The value at config key `path` (camelCase keys) of a stack given as any StackInput, as written (None when
    absent): what a component reads before it judges the stack (which layout, which tenants)."""
    if isinstance(stack, JudgedStack):
        node: Any = stack.raw
    elif isinstance(stack, Settings):
        node = stack.model_dump(mode="json", by_alias=True, exclude_unset=True)
    else:
        node = stack
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


class InvalidStack(SettingsError, pulumi.RunError):
    """The settings check refused a component's stack: every problem at once, each with its config key path, value,
    rule and fix (a SettingsError, so `except SettingsError` catches it; a pulumi.RunError, so the engine shows the
    message without a Python traceback)."""


def stand_in(path: KeyPath) -> str:
    """The stand-in of the Output at config key `path`: `input-` and the path below the top-level key, lower-case,
    joined with '-' (("inferenceTraining", "inference", "namespaces", 0) -> `input-inference-namespaces-0`); a text
    longer than a DNS-1123 label (63) is cut and ends with 8 hex digits of the path's SHA-256."""
    parts = [str(part).lower() for part in (path[1:] or path)]
    text = STAND_IN_PREFIX + "-".join(parts)
    text = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in text)
    if len(text) > 63:
        digest = hashlib.sha256("/".join(map(str, path)).encode()).hexdigest()[:8]
        text = f"{text[:54].rstrip('-')}-{digest}"
    return text


def _is_output(value: Any) -> bool:
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


def _set(raw: dict[str, Any], path: KeyPath, value: Any) -> None:
    """Set `raw` at `path`, making the mappings on the way; a list index must exist."""
    node: Any = raw
    for part in path[:-1]:
        if isinstance(node, list):
            node = node[part]
            continue
        if not isinstance(node.get(part), (dict, list)):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, Mapping):
        return [s for key, value in node.items() for s in (*_strings(key), *_strings(value))]
    if isinstance(node, (list, tuple)):
        return [s for value in node for s in _strings(value)]
    return []


def _replaced(node: Any, values: Mapping[str, Any]) -> Any:
    """`node` (a stack config) with every string that is a stand-in replaced by that stand-in's value: at the key
    the Output was given for, and wherever a component wrote the stand-in as a name (a service's namespace)."""
    if isinstance(node, str):
        return values.get(node, node)
    if isinstance(node, Mapping):
        return {key: _replaced(value, values) for key, value in node.items()}
    if isinstance(node, list):
        return [_replaced(value, values) for value in node]
    return node


@dataclass(frozen=True)
class Resolved:
    """The stack once every Output resolved and the settings check accepted it: `assembled` (its objects, in the
    order of the stand-in stack's), `objects` (`assembled.objects()`) and `values` (stand-in -> resolved value)."""

    assembled: AssembledStack
    objects: tuple[Rendered, ...]
    values: Mapping[str, Any]


class JudgedStack:
    """A stack's settings, judged, with the Outputs that replace some of its values (module docstring).

    Make one with `JudgedStack.of` (a component does it for you from its `stack` argument); the stack program makes
    one with `JudgedStack.prejudged` from the objects its settings check already judged.

    Attributes:
        settings: the judged Settings (an Output's value is its stand-in there).
        assembled: the stack's objects as rendered with the stand-ins (`components.model.assembly.assemble`).
        namespace_owner: the `kueue-cohorts/owner` mark of the Namespaces the stack creates.
        warnings: the advisory findings of the settings check.
        outputs: stand-in -> (config key path, the Output it stands for); empty without Outputs.
        resolved: a `Resolved` (plain without Outputs, else an Output that fails the deployment with `InvalidStack`
            when the check refuses the resolved values).
    """

    def __init__(self, raw: Optional[Mapping[str, Any]], settings: Settings, assembled: AssembledStack,
                 namespace_owner: Optional[str], outputs: Mapping[str, tuple[KeyPath, pulumi.Output[Any]]],
                 warnings: Sequence[Problem] = (), judged_here: bool = True):
        self._raw = raw
        self.settings = settings
        self.assembled = assembled
        self.namespace_owner = namespace_owner
        self.warnings = tuple(warnings)
        self.judged_here = judged_here
        self._logged = False
        self.outputs = dict(outputs)
        objects = tuple(assembled.objects())
        self._index = {id(item): index for index, item in enumerate(objects)}
        self.resolved: pulumi.Input[Resolved]
        if not self.outputs:
            self.resolved = Resolved(assembled, objects, {})
        else:
            texts = list(self.outputs)
            self.resolved = pulumi.Output.all(*(self.outputs[t][1] for t in texts)).apply(
                lambda values: self._resolve(dict(zip(texts, values, strict=True))))

    # --- making one ---------------------------------------------------------------------------------------------

    @classmethod
    def of(cls, stack: StackInput, inputs: Optional[Inputs] = None,
           namespace_owner: Optional[str] = None) -> JudgedStack:
        """Judge `stack` with `inputs` in place of its values at their config keys.

        Args:
            stack: a Settings (judged here, its values as given: `model_dump(by_alias=True, exclude_unset=True)`);
                a mapping of a stack file's keys without the `kueue-cohorts:` prefix (camelCase, as the
                configuration reference lists them), whose values may hold Outputs anywhere; or a JudgedStack
                (another component's `stack`; judged again only when `inputs` change something).
            inputs: config key path -> value (see `Inputs`); None values are left out (the stack's value stays).
            namespace_owner: the ownership mark of the Namespaces the stack creates. Omitted: a JudgedStack's own,
                else `<project>/<stack>` of the running Pulumi program.
        Returns: the JudgedStack.
        Raises:
            InvalidStack: the settings check refused the stack (every problem, stand-ins shown as such).
            ValueError: a stand-in's text is also a plain value of the stack (rename that value).
        """
        given = {path: value for path, value in (inputs or {}).items() if value is not None}
        if isinstance(stack, JudgedStack):
            return stack.with_inputs(given)
        owner = namespace_owner if namespace_owner is not None else owner_mark(pulumi.get_project(),
                                                                                pulumi.get_stack())
        if isinstance(stack, Settings):
            return cls._judge(stack.model_dump(mode="json", by_alias=True, exclude_unset=True), {}, given, owner)
        found: dict[str, tuple[KeyPath, pulumi.Output[Any]]] = {}
        raw = {key: cls._stand_ins((key,), value, found) for key, value in stack.items()}
        written = _strings(raw)
        for text, (path, _) in found.items():
            if written.count(text) > 1:
                raise ValueError(f"the stack uses {text!r} as a plain value, and it is also the stand-in of the Output "
                                 f"at {'.'.join(map(str, path))}. Fix: rename that value")
        return cls._judge(raw, found, given, owner)

    @classmethod
    def prejudged(cls, settings: Settings, assembled: AssembledStack,
                  namespace_owner: Optional[str]) -> JudgedStack:
        """A stack that the caller's settings check already judged (the stack program's `validate`, whose objects
        `assembled` holds): nothing is judged again and every object is registered as `assembled` has it."""
        return cls(None, settings, assembled, namespace_owner, {}, (), judged_here=False)

    def with_inputs(self, inputs: Inputs) -> JudgedStack:
        """This stack with further values replaced (`Inputs`; None values left out): itself when there are none,
        else judged again (Raises as `of`)."""
        given = {path: value for path, value in inputs.items() if value is not None}
        if not given:
            return self
        return self._judge(self.raw, self.outputs, given, self.namespace_owner)

    @property
    def raw(self) -> dict[str, Any]:
        """The stack config the check judged (`kueue-cohorts:*` keys without the prefix), stand-ins in place."""
        if self._raw is None:
            self._raw = self.settings.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return copy.deepcopy(dict(self._raw))

    @classmethod
    def _judge(cls, raw: dict[str, Any], outputs: Mapping[str, tuple[KeyPath, pulumi.Output[Any]]],
               inputs: Inputs, owner: Optional[str]) -> JudgedStack:
        raw = copy.deepcopy(raw)
        written = set(_strings(raw))
        found = dict(outputs)
        for path, value in inputs.items():
            _set(raw, path, cls._stand_ins(tuple(path), value, found))
        for text in set(found) - set(outputs):
            if text in written:
                raise ValueError(f"the stack uses {text!r} as a plain value, and it is also the stand-in of the Output "
                                 f"at {'.'.join(map(str, found[text][0]))}. Fix: rename that value")
        result = validate(raw, namespace_owner=owner)
        if result.problems or result.settings is None or result.rendered is None:
            raise InvalidStack(result.problems)
        assembled = assemble(result.settings, owner, result.rendered)
        return cls(raw, result.settings, assembled, owner, found, result.warnings)

    @staticmethod
    def _stand_ins(path: KeyPath, value: Any, found: dict[str, tuple[KeyPath, pulumi.Output[Any]]]) -> Any:
        """`value` with each Output in it replaced by its stand-in (recorded in `found`)."""
        if _is_output(value):
            text = stand_in(path)
            found[text] = (path, pulumi.Output.from_input(value))
            return text
        if isinstance(value, Mapping):
            return {key: JudgedStack._stand_ins(path + (key,), item, found) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [JudgedStack._stand_ins(path + (index,), item, found) for index, item in enumerate(value)]
        return value

    def _resolve(self, values: Mapping[str, Any]) -> Resolved:
        """Judge the stack with every stand-in replaced by its resolved value; the assembled stack, or raise
        InvalidStack (the deployment fails with the check's message)."""
        raw = _replaced(self.raw, values)
        result = validate(raw, namespace_owner=self.namespace_owner)
        if result.problems or result.settings is None or result.rendered is None:
            raise InvalidStack(result.problems)
        for warning in result.warnings:
            pulumi.log.warn(str(warning))
        assembled = assemble(result.settings, self.namespace_owner, result.rendered)
        objects = tuple(assembled.objects())
        if [(o.kind, o.patch) for o in objects] != [(o.kind, o.patch) for o in self.assembled.objects()]:
            raise InvalidStack([Problem(
                "kueue-cohorts:*", ", ".join(f"{t}={v!r}" for t, v in values.items()),
                "the resolved values change which objects the stack has (a value that is also written elsewhere?)",
                "give every Output a value that no other key of the stack has")])
        return Resolved(assembled, objects, dict(values))

    # --- using one ----------------------------------------------------------------------------------------------

    def props(self, rendered: Rendered) -> Mapping[str, pulumi.Input[Any]]:
        """What to register for `rendered`, one of `assembled.objects()`: its manifest as it is when the stack has no
        Outputs; else apiVersion and kind as they are and every other top-level field as the Output of that field in
        the resolved stack's object at the same position. Raises ValueError for an object not of this stack."""
        if not self.outputs:
            return rendered.manifest
        index = self._index.get(id(rendered))
        if index is None:
            raise ValueError(f"{rendered.kind} {rendered.name!r} is not an object of this stack")
        resolved = cast(pulumi.Output[Resolved], self.resolved)

        def field(key: str) -> pulumi.Output[Any]:
            return resolved.apply(lambda r: r.objects[index].manifest[key])

        return {key: value if key in _FIXED_KEYS else field(key) for key, value in rendered.manifest.items()}

    def value_of(self, text: Optional[str]) -> pulumi.Input[Any]:
        """`text` (a value of `settings`) as the stack has it: as it is when the stack has no Outputs; else an Output
        that resolves, only once the check accepted the resolved stack, to the stand-in's resolved value or to `text`
        itself. None stays None."""
        if text is None or not self.outputs:
            return text
        resolved = cast(pulumi.Output[Resolved], self.resolved)
        return resolved.apply(lambda r: r.values.get(text, text))

    def output(self, read: Callable[[AssembledStack], T]) -> pulumi.Input[T]:
        """`read` of the assembled stack: of the stand-in one's when there are no Outputs (plain), else of the resolved
        one (an Output)."""
        if not self.outputs:
            return read(self.assembled)
        return cast(pulumi.Output[Resolved], self.resolved).apply(lambda r: read(r.assembled))

    def log_warnings(self, resource: pulumi.Resource) -> None:
        """Log the check's advisory findings on `resource`, once per stack judged here (the stack program logs its
        own)."""
        if self.judged_here and not self._logged:
            self._logged = True
            for warning in self.warnings:
                pulumi.log.warn(str(warning), resource=resource)
