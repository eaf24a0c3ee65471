"""Promise 1 in the settings check: the stack's nominalQuota, per ResourceFlavor, against the node pools each flavor
selects by its nodeLabels (Kueue 0.19.2 copies them into the pods' nodeSelector), from `kueue-cohorts:nodePools`
and the rendered ResourceFlavors: the verdict is Hall's condition over every set of flavors."""
from __future__ import annotations

from decimal import Decimal
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.settings.quantity import parse
from tests.helpers import stack_raw

GPU = "nvidia.com/gpu"
POLICY = "cohort-nominal-within-capacity"
labels_st = st.dictionaries(st.sampled_from(["gpu", "zone"]), st.sampled_from(["a", "b"]), max_size=2)


def _selects(flavor_labels: dict, pool_labels: dict) -> bool:
    return all(pool_labels.get(k) == v for k, v in flavor_labels.items())


def _hall(flavors: dict[str, dict], quota: dict[str, dict[str, str]], pools: list[dict]) -> bool:
    """Every set of flavors fits, resource by resource, the pools its flavors select together."""
    for resource in {r for q in quota.values() for r in q}:
        for size in (1, 2):
            for group in combinations(flavors, size):
                nodes = {i for i, p in enumerate(pools) for f in group if _selects(flavors[f], p["labels"])}
                need = sum((parse(quota[f].get(resource, "0")) for f in group), Decimal(0))
                have = sum((pools[i]["count"] * parse(pools[i]["capacity"].get(resource, "0")) for i in nodes),
                           Decimal(0))
                if need > have:
                    return False
    return True


def _cap(pools: list[dict], nodes: set[int], resource: str) -> Decimal:
    return sum((pools[i]["count"] * parse(pools[i]["capacity"].get(resource, "0")) for i in nodes), Decimal(0))


def _worst_placement(flavors: dict[str, dict], quota: dict[str, dict[str, str]], pools: list[dict]) -> bool:
    """Two flavors: each one's quota fits its pools minus what the other's quota can place on the pools they share."""
    for resource in {r for q in quota.values() for r in q}:
        for mine, other in (("h100", "a100"), ("a100", "h100")):
            need = parse(quota[mine].get(resource, "0"))
            if need == 0:
                continue
            own = {i for i, p in enumerate(pools) if _selects(flavors[mine], p["labels"])}
            shared = {i for i in own if _selects(flavors[other], pools[i]["labels"])}

            if need + min(parse(quota[other].get(resource, "0")), _cap(pools, shared, resource)) > \
                    _cap(pools, own, resource):
                return False
    return True


@settings(max_examples=60, deadline=None)
@given(pool_labels=st.lists(labels_st, min_size=1, max_size=3), flavor_labels=st.tuples(labels_st, labels_st),
       gpus=st.lists(st.integers(0, 3), min_size=3, max_size=3), counts=st.lists(st.integers(1, 2), min_size=3,
                                                                                 max_size=3),
       quota=st.tuples(st.integers(1, 3), st.integers(1, 3)), names=st.lists(st.sampled_from(["h100", "a100", None]),
                                                                            min_size=3, max_size=3))
def test_the_settings_check_refuses_exactly_what_hall_and_the_worst_placement_refuse(pool_labels, flavor_labels,
                                                                                     gpus, counts, quota, names):
    raw = stack_raw("mixed")
    pools = [{"name": f"p{i}", "count": counts[i], "labels": labels,
              "capacity": {"cpu": "8", "memory": "32Gi", GPU: str(gpus[i])}, "resourceFlavor": names[i] or "h100"}
             for i, labels in enumerate(pool_labels)]
    raw["nodePools"] = pools
    flavors = {"h100": flavor_labels[0], "a100": flavor_labels[1]}
    raw["resourceFlavors"] = [{"name": name, "nodeLabels": labels} for name, labels in flavors.items()]
    for entry, gpu in zip(raw["inferenceTraining"]["inference"]["flavors"], quota, strict=True):
        entry["nominalQuota"][GPU] = str(gpu)
    found = [p for p in validate(raw).problems if p.policy == POLICY]
    wanted = {f["name"]: dict(f["nominalQuota"]) for f in raw["inferenceTraining"]["inference"]["flavors"]}
    holds = _hall(flavors, wanted, pools) and _worst_placement(flavors, wanted, pools)
    assert (found == []) == holds, [(p.key, p.rule) for p in found]
    for problem in found:  # each at a key of the stack config, with its own fix
        assert problem.key.startswith(("kueue-cohorts:inferenceTraining.inference.flavors[",
                                       "kueue-cohorts:resourceFlavors[")) and problem.fix
