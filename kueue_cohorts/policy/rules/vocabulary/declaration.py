"""What a policy is, declared once: its name, description, promise, level, scope, options and check.

Each rule module exports one `Declaration` per policy (a module may hold a closely related pair). Everything else
that names a policy derives from it: the rule book's order (`book.RULES`), the pack's policies (`catalog.py`), the
pack config schema the engine validates (`config.SCHEMAS`), the options table of policy/README.md
(`config.options_table`), which policies get which facts of a stack in its generated pack config
(`components/model/pack_config.py`: every policy that declares an option gets the stack's value of it) and the
tests' sets of names.

CrossGuard config is per policy (`pulumi preview --policy-pack-config file.json`, format
`{"<policy>": {"enforcementLevel": "...", "<option>": ...}}`); the engine fills in each option's `default` and
validates the result against the policy's schema before the pack runs (pulumi `pkg/resource/analyzer/config.go`
`ReconcilePolicyPackConfig`). `Option.read` applies the same defaults, so the settings check and unit tests can pass
`{}`. Numbers arrive through protobuf Structs as floats; an integer option reads them back as ints.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

from .values import Violation

T = TypeVar("T")


class Promise(str, Enum):
    """The promise a policy keeps; each is one section of policy/README.md, in this order.

    A promise is judged over the whole stack (or plan, or live cluster), not object by object. `WELL_FORMED` holds
    the rules that keep the book able to judge at all (API versions, quantities, patches, Helm releases) and keep the
    stack out of namespaces it does not own.
    """

    GPUS_EXIST = "gpus-exist"
    """1. Inference's GPUs physically exist: quota against the capacity of the nodes each ResourceFlavor selects."""
    KUEUE_COUNTS = "kueue-counts-every-pod"
    """2. Kueue counts every inference and training pod: manager Configuration, namespaces, resources."""
    RECLAIM = "inference-can-reclaim"
    """3. Inference can always take its quota back: reclaim, priorities, borrowing, every serving kind's updates."""
    TRAINING_SURVIVES = "training-survives-preemption"
    """4. Preempted training loses at most one save interval: signals, grace, checkpoint volume, runtime."""
    WELL_FORMED = "well-formed"
    """The book can judge the stack, and the stack stays in its own namespaces."""

    @property
    def heading(self) -> str:
        """The heading of this promise's section in policy/README.md."""
        return PROMISE_TITLES[self]


PROMISE_TITLES: dict[Promise, str] = {
    Promise.GPUS_EXIST: "Promise 1: inference's GPUs physically exist",
    Promise.KUEUE_COUNTS: "Promise 2: Kueue counts every inference and training pod",
    Promise.RECLAIM: "Promise 3: inference can always take its quota back",
    Promise.TRAINING_SURVIVES: "Promise 4: preempted training loses at most one save interval",
    Promise.WELL_FORMED: "Well-formed stacks: what the book needs to judge at all",
}


class Level(str, Enum):
    """A policy's default enforcement level (pulumi-policy `EnforcementLevel`; the pack config may change it per
    policy). The settings check reports mandatory findings as errors and advisory ones as warnings."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"


class Scope(str, Enum):
    """What a policy's check takes: every object of the stack (a pulumi-policy StackValidationPolicy), one object
    at a time (a ResourceValidationPolicy), or the objects of every cluster of a MultiKueue stack at once,
    `{cluster: objects}` (a StackValidationPolicy; `vocabulary/multikueue.py` says which cluster an object is on)."""

    STACK = "stack"
    RESOURCE = "resource"
    CLUSTERS = "clusters"


@dataclass(frozen=True, eq=False)
class Option(Generic[T]):
    """One option of a policy's section of the pack config.

    key: the option's name in the config (camelCase). schema: the JSON schema of its value, without `default` and
    `description` (`json_schema` adds them). default: the value when the config does not set it (also the engine's,
    through the schema). doc: what it means (the schema's `description` and the README table's last column).
    Options are compared by identity: two policies that declare the same object take the same fact of a stack.
    """

    key: str
    schema: Mapping[str, Any]
    default: T
    doc: str

    def json_schema(self) -> dict[str, Any]:
        """The option's JSON schema as pulumi-policy's `PolicyConfigSchema.properties` entry: type, default,
        description."""
        return {**copy.deepcopy(dict(self.schema)), "default": copy.deepcopy(self.default), "description": self.doc}

    def read(self, config: Mapping[str, Any]) -> T:
        """The option's value in a policy's config (what `args.get_config()` returns, or that policy's section of a
        pack config file), else `default`; an integer option turns a whole float back into an int.

        Raises KeyError when `config` is the `Options` of a policy that does not declare this option: a check that
        reads an undeclared option would judge with a fact its pack config never carries.
        """
        if isinstance(config, Options) and not config.declaration.declares(self):
            raise KeyError(f"policy {config.declaration.name} reads option {self.key}, which it does not declare")
        value: Any = config.get(self.key, self.default) if config else self.default
        if self.schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)  # type: ignore[return-value]
        result: T = value
        return result

    @property
    def type_text(self) -> str:
        """A reader's name of the value's type: `integer`, `string`, `list of strings`, `map of integers`, ..."""
        return _type_text(self.schema)


def _type_text(schema: Mapping[str, Any], plural: bool = False) -> str:
    kind = schema.get("type")
    if kind == "array":
        return f"{'lists' if plural else 'list'} of {_type_text(schema.get('items') or {}, True)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"{'maps' if plural else 'map'} of {_type_text(schema['additionalProperties'], True)}"
    kinds = [str(k) for k in kind] if isinstance(kind, list) else [str(kind or "any")]
    return " or ".join(f"{k}s" if plural else k for k in kinds)


def names(key: str, doc: str) -> Option[list[str]]:
    """An option holding a list of names (strings), default empty."""
    return Option(key, {"type": "array", "items": {"type": "string"}}, [], doc)


def mapping(key: str, values: Mapping[str, Any], doc: str) -> Option[dict[str, Any]]:
    """An option holding a map from names to values of JSON schema `values`, default empty."""
    return Option(key, {"type": "object", "additionalProperties": dict(values)}, {}, doc)


def integer(key: str, default: int, doc: str, minimum: int = 0) -> Option[int]:
    """An option holding an integer of at least `minimum`."""
    return Option(key, {"type": "integer", "minimum": minimum}, default, doc)


def string(key: str, default: str, doc: str) -> Option[str]:
    """An option holding a string."""
    return Option(key, {"type": "string"}, default, doc)


Check = Callable[[Any, "Options"], list[Violation]]
"""A policy's check: (every object of the stack, or one object, by its `Scope`; its options) -> violations."""


@dataclass(frozen=True)
class Declaration:
    """One policy, declared once.

    name: the policy name (lower-case, unique in the pack; the key of its section of the pack config).
    description: one sentence (the SDK prints it above every violation message). promise: the promise it keeps (its
    section of policy/README.md). level: its default enforcement level. scope: what `check` takes. check:
    `(objects or object, options) -> violations`; it reads its options with `Option.read(options)`, and only the
    options it declares. options: its options, in the order of the schema and the README table.
    """

    name: str
    description: str
    promise: Promise
    level: Level
    scope: Scope
    check: Check
    options: tuple[Option[Any], ...] = ()

    @property
    def mandatory(self) -> bool:
        """True when the policy is mandatory by default."""
        return self.level is Level.MANDATORY

    @property
    def stack(self) -> bool:
        """True when `check` takes every object of the stack (of one cluster, or of every cluster: `clusters`)."""
        return self.scope is not Scope.RESOURCE

    @property
    def clusters(self) -> bool:
        """True when `check` takes `{cluster: objects}`, the objects of every cluster of a MultiKueue stack."""
        return self.scope is Scope.CLUSTERS

    def declares(self, option: Option[Any]) -> bool:
        """True when this policy takes `option` (the same object)."""
        return any(option is own for own in self.options)

    def schema(self) -> dict[str, dict[str, Any]]:
        """The policy's section of the pack config schema: option key -> its JSON schema (empty without options)."""
        return {option.key: option.json_schema() for option in self.options}

    def options_of(self, config: Mapping[str, Any]) -> Options:
        """`config` (the policy's section of the pack config) as this policy's check reads it."""
        return Options(self, config)


class Options(Mapping[str, Any]):
    """A policy's section of the pack config, bound to its declaration: a read-only mapping of what the config sets,
    through which `Option.read` refuses an option the policy does not declare."""

    def __init__(self, declaration: Declaration, config: Mapping[str, Any]) -> None:
        self.declaration = declaration
        self._config = config

    def __getitem__(self, key: str) -> Any:
        return self._config[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._config)

    def __len__(self) -> int:
        return len(self._config)
