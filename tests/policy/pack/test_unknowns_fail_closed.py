"""Values unknown at preview fail closed, never crash (issue 26 item 5; policy/README.md "Unknown values fail closed").

For every object of every stack file's assembled stack (`components.model.assembly.assemble`: what the program
registers,
plus the manager Configuration it only judges) and of the pack's compliant fixture (tests/policy/fixtures.py), every
field, leaf and subtree, is replaced by Pulumi's unknown (`UNKNOWN_STRING_VALUE` under the SDK's
`unknown_checking_proxy`, as the analyzer hands properties at preview), one at a time. Then:

- `book.run` and the catalog's policies (stack and resource) never raise;
- every rule whose verdict depends on that field reports it: a violation of that rule naming the field.

One member of each class is mutated: a field path (list positions aside) of an object kind, read by the same rules,
is tried once per stack; the stacks repeat such objects (Namespaces, tenants' queues, quota rows) many times over.

Which rules a field matters to: each rule is run alone on the original objects behind a proxy that records every
field read (`Recorder`); a rule that never reads a field behaves the same whatever the field holds, so only its
readers are run on the mutated stack. A reader's verdict depends on the field when its violations change once the
field holds another concrete value (`_alternatives`: other strings, numbers, an empty map or list); such a rule must
report the unknown. A reader whose verdict stays the same (a name read only for a message) may stay silent.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from pulumi_policy import (
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.policy.rules import book
from kueue_cohorts.policy.rules.book.catalog import build_policies
from kueue_cohorts.policy.rules.book.config import SCHEMAS
from kueue_cohorts.policy.rules.cluster_queue_role import CLUSTER_QUEUE_ROLE
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import COHORT_NOMINAL_WITHIN_CAPACITY
from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import INFERENCE_BORROWING_LIMIT_ZERO
from kueue_cohorts.policy.rules.inference_fits_nominal import INFERENCE_FITS_NOMINAL
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject, from_resource
from kueue_cohorts.policy.rules.vocabulary.values import format_path
from tests.helpers import STACKS
from tests.policy import fixtures
from tests.policy.harness import REPO
from tests.policy.harness import pack_config as pack_config_file

Path = tuple[Any, ...]
Item = tuple[str, dict[str, Any]]  # (type token, manifest)


class Recorder(Mapping[str, Any]):
    """A read-only view of a JSON object that adds the path of every field read to `log` (lists: `RecordedList`)."""

    def __init__(self, data: dict[str, Any], path: Path, log: set[Path]):
        self._data, self._path, self._log = data, path, log

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        path = self._path + (key,)
        self._log.add(path)
        return _recorded(value, path, self._log)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class RecordedList(Sequence[Any]):
    """The list twin of `Recorder`."""

    def __init__(self, data: list[Any], path: Path, log: set[Path]):
        self._data, self._path, self._log = data, path, log

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._data)))]
        index = index + len(self._data) if index < 0 else index
        value = self._data[index]
        path = self._path + (index,)
        self._log.add(path)
        return _recorded(value, path, self._log)

    def __len__(self) -> int:
        return len(self._data)


def _recorded(value: Any, path: Path, log: set[Path]) -> Any:
    if isinstance(value, dict):
        return Recorder(value, path, log)
    if isinstance(value, list):
        return RecordedList(value, path, log)
    return value


def _paths(node: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every field path under `node` (maps and lists), the subtrees before their leaves."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield prefix + (index,)
            yield from _paths(value, prefix + (index,))


def _at(node: Any, path: Path) -> Any:
    for step in path:
        node = node[step]
    return node


def _with(manifest: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(manifest)
    _at(out, path[:-1])[path[-1]] = value
    return out


def _alternatives(value: Any) -> list[Any]:
    """Other concrete values the field could hold (the same JSON type), to learn whether a verdict depends on it."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [0, -1, 10**9]
    if isinstance(value, str):
        return ["", "zz-other", "1000000", "-1"]
    if isinstance(value, dict):
        return [{}]
    if isinstance(value, list):
        return [[]]
    return []


def _objects(items: Sequence[Item], proxy: Any = None) -> list[KubeObject]:
    out = []
    for index, (token, manifest) in enumerate(items):
        props = proxy(index, manifest) if proxy is not None else copy.deepcopy(manifest)
        obj = from_resource(token, props, urn=f"urn:pulumi:test::kueue-cohorts::{token}::r{index}",
                            resource_name=f"r{index}")
        assert obj is not None
        out.append(obj)
    return out


def _only(config: Mapping[str, Any], rules: Sequence[str]) -> dict[str, Any]:
    """`config` with every rule but `rules` disabled."""
    return {r.name: (config.get(r.name) or {}) if r.name in rules else "disabled" for r in book.RULES}


def _verdicts(items: Sequence[Item], config: Mapping[str, Any], rules: Sequence[str]) -> dict[str, list[str]]:
    """Per rule of `rules`: its violation messages on plain objects, sorted."""
    out: dict[str, list[str]] = {name: [] for name in rules}
    for rule, violation in book.run(_objects(items), _only(config, rules)):
        out[rule.name].append(violation.message)
    return {name: sorted(messages) for name, messages in out.items()}


def _reads(items: Sequence[Item], config: Mapping[str, Any]) -> dict[str, list[set[Path]]]:
    """Per rule, per object: every field path the rule reads when it judges `items` alone."""
    out = {}
    for rule in book.RULES:
        logs: list[set[Path]] = [set() for _ in items]
        book.run(_objects(items, lambda i, m, logs=logs: Recorder(copy.deepcopy(m), (), logs[i])),
                 _only(config, [rule.name]))
        out[rule.name] = logs
    return out


_OPTS = PolicyResourceOptions(False, [], None, [], None, [], None)
_POLICIES = {policy.name: policy for policy in build_policies()}


def _catalog(items: Sequence[Item], config: Mapping[str, Any], rules: Sequence[str]) -> dict[str, list[str]]:
    """Run the catalog's policies of `rules` as the analyzer would at preview (properties behind the SDK's
    unknown-checking proxy); per policy its messages. Exceptions propagate."""
    out: dict[str, list[str]] = {}
    for name in rules:
        policy = _POLICIES[name]
        options = {key: prop["default"] for key, prop in SCHEMAS[name].items() if "default" in prop}
        options.update({k: v for k, v in (config.get(name) or {}).items() if k != "enforcementLevel"})
        messages: list[str] = []

        def report(message: str, urn: Any = None, messages: list[str] = messages) -> None:
            messages.append(message)

        resources = [(token, f"urn:pulumi:test::kueue-cohorts::{token}::r{i}", f"r{i}", manifest)
                     for i, (token, manifest) in enumerate(items)]
        if isinstance(policy, StackValidationPolicy):
            stack = [PolicyResource(t, unknown_checking_proxy(copy.deepcopy(p)), u, n, _OPTS, None, None, [], {})
                     for t, u, n, p in resources]
            policy.validate(StackValidationArgs(stack, options), report)
        else:
            for t, u, n, p in resources:
                policy.validate(ResourceValidationArgs(t, unknown_checking_proxy(copy.deepcopy(p)), u, n, _OPTS,
                                                       None, options), report)
        out[name] = messages
    return out


def _stack_case(path: Any) -> tuple[list[Item], dict[str, Any]]:
    settings = load_settings(raw_from_stack_file(path))
    items = [(r.type_token, json.loads(json.dumps(r.manifest))) for r in assemble(settings).objects()]
    return items, pack_config(settings)


def _fixture_case() -> tuple[list[Item], dict[str, Any]]:
    items = [(fixtures.type_token(m), m) for m in fixtures.compliant().values()]
    return items, pack_config_file(REPO / "kueue_cohorts" / "policy" / "config" / "dev.json")


CASES = {**{p.stem.removeprefix("Pulumi."): p for p in sorted(STACKS.glob("Pulumi.*.yaml"))}, "pack-fixtures": None}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_unknown_field_fails_closed_in_every_rule_that_depends_on_it(case):
    items, config = _fixture_case() if CASES[case] is None else _stack_case(CASES[case])
    reads = _reads(items, config)
    base = _verdicts(items, config, [r.name for r in book.RULES])
    failures: list[str] = []
    mutations = 0
    tried: set[tuple[str, Path, tuple[str, ...]]] = set()
    for index, (token, manifest) in enumerate(items):
        for path in _paths(manifest):
            readers = [name for name, logs in reads.items() if path in logs[index]]
            if not readers:
                continue  # no rule reads it: none can depend on it, none can meet the unknown
            # One member per class: the same field (list positions aside) of the same kind, read by the same rules,
            # takes the same code path (a stack repeats Namespaces, tenants' queues and their quota rows).
            shape = (token, tuple("[]" if isinstance(step, int) else step for step in path), tuple(readers))
            if shape in tried:
                continue
            tried.add(shape)
            mutations += 1
            field = format_path(list(path))
            where = f"{manifest['kind']} #{index} {field}"
            depends = set()
            for value in _alternatives(_at(manifest, path)):
                changed = list(items)
                changed[index] = (token, _with(manifest, path, value))
                got = _verdicts(changed, config, readers)
                depends |= {name for name in readers if got[name] != base[name]}
            unknown = list(items)
            unknown[index] = (token, _with(manifest, path, UNKNOWN_STRING_VALUE))
            try:
                found = book.run(_objects(unknown, lambda i, m: unknown_checking_proxy(copy.deepcopy(m))),
                                 _only(config, readers))
            except Exception as err:  # noqa: BLE001 - any exception is the failure reported
                failures.append(f"{where}: book.run raised {type(err).__name__}: {err}")
                continue
            try:
                messages = _catalog(unknown, config, readers)
            except Exception as err:  # noqa: BLE001
                failures.append(f"{where}: a catalog policy raised {type(err).__name__}: {err}")
                continue
            for name in sorted(depends):
                if not any(rule.name == name and (v.field == field or field in v.message) for rule, v in found):
                    failures.append(f"{where}: book rule {name} depends on it but does not report it unknown")
                if not any(field in message for message in messages[name]):
                    failures.append(f"{where}: policy {name} depends on it but does not report it unknown")
    assert mutations > 0
    assert failures == []


def _dev_with_unknown(kind: str, name: str, path: Path) -> list[Item]:
    """The dev stack's objects with `path` of the `kind` called `name` unknown (exactly one such object)."""
    items, _ = _stack_case(STACKS / "Pulumi.dev.yaml")
    out, changed = [], 0
    for token, manifest in items:
        if manifest["kind"] == kind and manifest["metadata"]["name"] == name:
            manifest = _with(manifest, path, UNKNOWN_STRING_VALUE)
            changed += 1
        out.append((token, manifest))
    assert changed == 1, f"the dev stack has {changed} {kind} {name!r}"
    return out


# (kind, name, field, a rule whose verdict depends on it): each once crashed the rule or passed it silently.
KNOWN_HOLES = [
    # an unknown inference ClusterQueue name: KeyError inside the capacity rule (its sums were half updated)
    ("ClusterQueue", "c12-inference-cq", ("metadata", "name"), COHORT_NOMINAL_WITHIN_CAPACITY.name),
    ("ClusterQueue", "c12-inference-cq", ("metadata",), COHORT_NOMINAL_WITHIN_CAPACITY.name),
    # the queue index left the LocalQueue out: "the LocalQueue is not in this stack" instead of the unknown field
    ("LocalQueue", "c12-inference-lq", ("spec", "clusterQueue"), INFERENCE_FITS_NOMINAL.name),
    # the roles left the priority class out silently, so no queue was inference any more
    ("WorkloadPriorityClass", "c12-inference-prio", ("value",), INFERENCE_BORROWING_LIMIT_ZERO.name),
    # the roles computed for an earlier rule of the same judgement were served without the unknown they skipped
    ("ClusterQueue", "c12-training-cq", ("metadata",), CLUSTER_QUEUE_ROLE.name),
]


@pytest.mark.parametrize("kind,name,path,rule", KNOWN_HOLES, ids=[f"{h[0]}-{'.'.join(map(str, h[2]))}-{h[3]}"
                                                                  for h in KNOWN_HOLES])
def test_a_known_hole_fails_closed_in_the_book_and_the_pack(kind, name, path, rule):
    items = _dev_with_unknown(kind, name, path)
    _, config = _stack_case(STACKS / "Pulumi.dev.yaml")
    field = format_path(list(path))
    found = book.run(_objects(items, lambda i, m: unknown_checking_proxy(copy.deepcopy(m))), config)
    assert any(r.name == rule and (v.field == field or field in v.message) for r, v in found)
    messages = _catalog(items, config, [r.name for r in book.RULES])
    assert any(field in message and "unknown at preview" in message for message in messages[rule])
