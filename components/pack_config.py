"""The policy pack config of a stack, generated from its settings: what the pack must know that objects do not say.

`policy/config/<stack>.json` is this, written by `python -m components.validation --stack <stack> --pack-config
--write` and
checked against the stack file by the tests, so the pack (in CI, with `--policy-pack-config`) and the program's
settings check (which runs the same rule book in-process with this same config) judge with the same facts:
- `inferenceClusterQueues`: the inference ClusterQueue names (a ClusterQueue written by hand, through a ConfigGroup
  or a patch, without our role label, is still judged as inference);
- `inferencePriorityClasses` / `trainingPriorityClasses`: the WorkloadPriorityClass names of each side;
- `capacity`: the physical capacity per resource from `nodePools`;
- `kueueNamespace`: Kueue's namespace.
"""
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from components import quantity
from components.settings import Settings

INFERENCE_RULES = ("inference-borrowing-limit-zero", "inference-reclaim-any", "inference-namespace-selector",
                   "cluster-queue-namespace-selector", "workload-priority-class")


def capacity(settings: Settings) -> dict[str, str]:
    """Physical capacity per resource: sum over node pools of count x capacity, as canonical quantities (binary
    suffix kept where a pool used one)."""
    total: dict[str, Decimal] = {}
    binary: set[str] = set()
    for pool in settings.node_pools:
        for resource, amount in pool.capacity.items():
            total[resource] = total.get(resource, Decimal(0)) + pool.count * quantity.parse(amount)
            if quantity.is_binary(amount):
                binary.add(resource)
    return {r: quantity.canonical(v, binary=r in binary) for r, v in total.items()}


def pack_config(settings: Settings) -> dict[str, Any]:
    """The policy pack config for `settings`: policy name -> options (only options that differ from the schema
    defaults, in a stable order)."""
    config: dict[str, Any] = {"cohort-nominal-within-capacity": {"capacity": capacity(settings)}}
    it = settings.inference_training
    if it is not None:
        for rule in INFERENCE_RULES:
            config[rule] = {"inferenceClusterQueues": [it.inference.cluster_queue]}
        config["workload-priority-class"].update(
            inferencePriorityClasses=[it.inference.priority_class.name],
            trainingPriorityClasses=[it.training.priority_class.name])
    if settings.kueue.namespace != "kueue-system":
        config["kueue-manager-config"] = {"kueueNamespace": settings.kueue.namespace}
    return config


def render(settings: Settings) -> str:
    """The config file's text (JSON, two-space indent, trailing newline)."""
    return json.dumps(pack_config(settings), indent=2) + "\n"
