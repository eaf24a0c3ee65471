"""The nodes of a stack, for COHORT_NOMINAL_WITHIN_CAPACITY: node pools with their labels and capacity.

A node pool is `{name, count, labels, capacity: {resource: quantity per node}}` (count defaults to 1), the shape of
this project's `kueue-cohorts:nodePools` and of the pack config's `nodePools` option. What a ResourceFlavor's quota
may count on is decided by the pools' `labels` (see `cohort_nominal_within_capacity.py`), never by a pool's
`resourceFlavor` name.

Where the pools come from, first match wins (`catalog._options`):
1. `nodePools` in the policy pack config (`policy/config/<stack>.json`, generated from the stack file): each pool must
   carry `labels` (an absent `labels` is unknown, and a flavor with nodeLabels then fails closed);
2. the legacy `capacity` option (a total per resource): one pool named `capacity` whose labels are unknown;
3. the stack's own `kueue-cohorts:nodePools`, which the engine hands the analyzer in `PULUMI_CONFIG` (a JSON object of
   "<project>:<key>" -> value, objects as JSON text; pulumi `sdk/python/lib/pulumi/runtime/config.py`
   get_config_env), so `pulumi preview --policy-pack kueue_cohorts/policy` works without a config file; there an
   omitted `labels`
   means the nodes carry none (the stack config's default);
4. nothing: every quota then fails (fail closed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Mapping, Optional

from .quantity import is_binary, parse

NODE_POOLS_KEYS = ("kueue-cohorts:nodePools", "kueue-cohorts:config:nodePools")
LEGACY_POOL = "capacity"
"""The name of the one pool the legacy `capacity` option stands for (its node labels are unknown)."""


@dataclass(frozen=True)
class NodePool:
    """Identical nodes: `count` of them, each with `capacity` (resource -> base units) and `labels`.

    Attributes:
        name: the pool's name (messages). where: its place in the config ("nodePools[0]", "capacity").
        count: how many nodes (>= 1). capacity: allocatable per node, resource -> Decimal in base units.
        labels: the nodes' labels; None when unknown (a pack config pool without labels, the legacy `capacity`).
        binary: resources written with a binary suffix (shown that way in messages).
        resource_flavor: the `resourceFlavor` the pool names (documentation only: Kueue places by labels).
    """

    name: str
    where: str
    count: int
    capacity: Mapping[str, Decimal]
    labels: Optional[Mapping[str, str]]
    binary: frozenset[str] = frozenset()
    resource_flavor: Optional[str] = None

    def total(self, resource: str) -> Decimal:
        """count x the per-node capacity of `resource` (0 when the pool does not declare it), base units."""
        return self.count * self.capacity.get(resource, Decimal(0))


def parse_node_pools(raw: Any, where: str = "nodePools", labels_default: Optional[Mapping[str, str]] = None
                     ) -> tuple[list[NodePool], list[str]]:
    """Read a list of node pools.

    Args:
        raw: the decoded list (pack config `nodePools`, or the stack's `kueue-cohorts:nodePools`).
        where: the option's name, for messages.
        labels_default: the labels of a pool that gives none: None (unknown: the pack config) or {} (the stack
            config, where omitted labels mean none).
    Returns:
        (pools, problems): the readable pools, and one sentence per entry that is not a pool with a whole count >= 1,
        a mapping of quantities and string labels (such a pool is left out: the quota it would hold then fails).
    """
    if not isinstance(raw, list):
        return [], [f"{where} is {raw!r}, not a list of node pools {{name, count, labels, capacity}}"]
    pools: list[NodePool] = []
    problems: list[str] = []
    for index, entry in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("capacity"), Mapping):
            problems.append(f"{at} is not a node pool with a capacity mapping (resource -> quantity per node)")
            continue
        count = entry.get("count", 1)
        if isinstance(count, float) and count.is_integer():
            count = int(count)  # JSON numbers arrive as floats through the gRPC Struct
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.append(f"{at}.count is {count!r}, not a whole number of nodes >= 1")
            continue
        capacity: dict[str, Decimal] = {}
        binary: set[str] = set()
        for resource, text in entry["capacity"].items():
            value = parse(text)
            if value is None or value < 0:
                problems.append(f"{at}.capacity['{resource}'] is {text!r}, not a non-negative Kubernetes quantity")
                continue
            capacity[str(resource)] = value
            if is_binary(text):
                binary.add(str(resource))
        labels_raw = entry.get("labels")
        labels: Optional[dict[str, str]]
        if labels_raw is None:
            labels = None if labels_default is None else dict(labels_default)
        elif isinstance(labels_raw, Mapping) and all(isinstance(v, str) for v in labels_raw.values()):
            labels = {str(k): v for k, v in labels_raw.items()}
        else:
            problems.append(f"{at}.labels is {labels_raw!r}, not a mapping of label key -> string value")
            labels = None
        flavor = entry.get("resourceFlavor")
        pools.append(NodePool(str(entry.get("name") or at), at, count, capacity, labels, frozenset(binary),
                              flavor if isinstance(flavor, str) else None))
    return pools, problems


def legacy_pool(capacity: Mapping[str, Any]) -> tuple[list[NodePool], list[str]]:
    """The legacy `capacity` option (resource -> total quantity) as one pool of one node whose labels are unknown:
    only a ResourceFlavor without nodeLabels is known to select it."""
    if not capacity:
        return [], []
    pools, problems = parse_node_pools([{"name": LEGACY_POOL, "capacity": dict(capacity)}], LEGACY_POOL)
    prefix = f"{LEGACY_POOL}[0].capacity"
    return ([replace(p, where=LEGACY_POOL) for p in pools],
            [LEGACY_POOL + problem[len(prefix):] if problem.startswith(prefix) else problem for problem in problems])


def _node_pools(config_env: Mapping[str, Any]) -> Any:
    for key in NODE_POOLS_KEYS:
        if key in config_env:
            raw = config_env[key]
            if isinstance(raw, str):
                try:
                    raw = json.loads(raw)
                except ValueError:
                    return None
            return raw
    return None


def node_pools_from_stack_config(config_env: Mapping[str, Any]) -> Optional[list[dict[str, Any]]]:
    """The stack's `kueue-cohorts:nodePools` from the engine's stack config map (see module docstring), as pack
    config `nodePools` entries (labels written out, {} when the stack gives none), or None when absent or
    unreadable."""
    raw = _node_pools(config_env)
    if not isinstance(raw, list):
        return None
    return [{**entry, "labels": entry.get("labels") or {}} if isinstance(entry, Mapping) else entry for entry in raw]


def worker_node_pools_from_stack_config(config_env: Mapping[str, Any], worker: str) -> Optional[list[dict[str, Any]]]:
    """MultiKueue worker `worker`'s `nodePools` from the engine's stack config map (`kueue-cohorts:multiKueue`,
    `workers[].nodePools` of the entry named `worker`), shaped as `node_pools_from_stack_config`; None when the
    stack gives none (the worker then has the stack's own nodes) or it is unreadable."""
    raw = config_env.get("kueue-cohorts:multiKueue")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    workers = raw.get("workers") if isinstance(raw, Mapping) else None
    for entry in workers if isinstance(workers, list) else []:
        if isinstance(entry, Mapping) and entry.get("name") == worker:
            return node_pools_from_stack_config({NODE_POOLS_KEYS[0]: entry.get("nodePools")})
    return None

