"""The physical capacity of a stack from its own config, for cohort-nominal-within-capacity.

A stack of this project declares its nodes in `kueue-cohorts:nodePools` (a list of `{name, count, capacity:
{resource: quantity per node}}`; count defaults to 1). The analyzer gets the stack's config from the engine in
`PULUMI_CONFIG` (a JSON object of "<project>:<key>" -> value, objects as JSON text; pulumi `sdk/python/lib/pulumi/
runtime/config.py` get_config_env), so `pulumi preview --policy-pack policy` works without a config file. An explicit
`capacity` in the policy pack config wins; a program without nodePools gets no derived capacity (and fails closed).
"""
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Mapping, Optional

from .quantities import parse, show

NODE_POOLS_KEYS = ("kueue-cohorts:nodePools", "kueue-cohorts:config:nodePools")


def capacity_from_node_pools(node_pools: Any) -> Optional[dict[str, str]]:
    """Sum count x capacity over node pools.

    Args:
        node_pools: the decoded `kueue-cohorts:nodePools` value.
    Returns:
        resource -> total quantity text (binary suffix kept where the pools used one), or None when the value is not
        a list of pools with parsable quantities (then nothing is derived and the policy fails closed).
    """
    if not isinstance(node_pools, list):
        return None
    totals: dict[str, Decimal] = {}
    binary: set[str] = set()
    for pool in node_pools:
        if not isinstance(pool, Mapping) or not isinstance(pool.get("capacity"), Mapping):
            return None
        count = pool.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, (int, float)) or count < 1:
            return None
        for resource, raw in pool["capacity"].items():
            value = parse(raw)
            if value is None:
                return None
            totals[resource] = totals.get(resource, Decimal(0)) + int(count) * value
            if isinstance(raw, str) and raw.strip()[-2:] in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
                binary.add(resource)
    return {resource: show(total, resource in binary) for resource, total in totals.items()}


def flavor_capacity_from_node_pools(node_pools: Any) -> Optional[dict[str, dict[str, str]]]:
    """Sum count x capacity over the node pools of each ResourceFlavor (a pool's `resourceFlavor`).

    Args:
        node_pools: the decoded `kueue-cohorts:nodePools` value.
    Returns:
        flavor -> resource -> total quantity text, for the pools that name their flavor; {} when none does (a
        single-flavor stack: only the total capacity is checked); None when the value is not a list of pools with
        parsable quantities (nothing is derived).
    """
    if capacity_from_node_pools(node_pools) is None:
        return None
    by_flavor: dict[str, list[Any]] = {}
    for pool in node_pools:
        flavor = pool.get("resourceFlavor")
        if isinstance(flavor, str) and flavor:
            by_flavor.setdefault(flavor, []).append(pool)
    return {flavor: capacity_from_node_pools(pools) or {} for flavor, pools in by_flavor.items()}


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


def flavor_capacity_from_stack_config(config_env: Mapping[str, Any]) -> Optional[dict[str, dict[str, str]]]:
    """The derived per-flavor capacity from the engine's stack config map (see module docstring), or None."""
    return flavor_capacity_from_node_pools(_node_pools(config_env))


def capacity_from_stack_config(config_env: Mapping[str, Any]) -> Optional[dict[str, str]]:
    """The derived capacity from the engine's stack config map (see module docstring), or None."""
    return capacity_from_node_pools(_node_pools(config_env))
