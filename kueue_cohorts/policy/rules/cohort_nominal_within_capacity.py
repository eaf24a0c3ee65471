"""COHORT_NOMINAL_WITHIN_CAPACITY: the nominalQuota of the whole stack fits the nodes each ResourceFlavor selects.

The model (Kueue 0.19.2):
- A ResourceFlavor stands for the nodes whose labels include every one of its `spec.nodeLabels` (same key, same
  value): once a workload is admitted in a flavor, Kueue copies the flavor's nodeLabels into the pods' nodeSelector
  (`pkg/podset/podset.go` FromAssignment: `utilmaps.Copy(&info.NodeSelector, flv.Spec.NodeLabels)`), so the
  kube-scheduler only places them on such nodes; Kueue's own node matching for a flavor is the same test
  (`pkg/util/tas/node.go` NodeMatchesFlavor: `nodeLabels[k] == v` for every k, v of the flavor). A flavor without
  nodeLabels selects every node. The field doc: `apis/kueue/v1beta2/resourceflavor_types.go` (nodeLabels "associate
  the ResourceFlavor with Nodes that have the same labels").
- Quota is a guarantee: `nominalQuota` "should represent the resources in the cluster available for running jobs"
  (`apis/kueue/v1beta2/clusterqueue_types.go`), and a Cohort's `spec.resourceGroups` nominalQuota is extra quota its
  tree shares (`cohort_types.go`). Kueue never compares quota with nodes, so every ClusterQueue and Cohort of every
  cohort tree, and every queue in no cohort, counts against the same nodes.
- So, per resource, the quota of each flavor must be placeable on the nodes it selects, where flavors that select the
  same nodes share them: a transportation problem (flavors demand their quota, node pools supply count x capacity,
  a flavor may use the pools it selects). It is feasible exactly when for every set S of flavors the quota of S fits
  the capacity of the pools S selects together (Hall's condition, Gale's supply-demand theorem); this checks it
  exactly, for any number of flavors, with a maximum flow, and names each smallest failing set (the flavors left on
  the source side of the minimum cut, split into groups that share no pool).
- A pool counts where its labels say, whatever `resourceFlavor` it names; a flavor whose nodeLabels no pool carries
  has no capacity.
- A Topology-Aware flavor (`spec.topologyName`) selects only the nodes that also carry every level label of its
  Topology (`spec.levels[].nodeLabel`; `pkg/cache/scheduler/tas_flavor.go` finds them with nodeLabels and levels).

It cannot decide, and fails closed with a named violation, when: a value it reads is unknown at preview; a quota
names a ResourceFlavor that neither the stack nor the `flavorNodeLabels` option defines; a Topology-Aware flavor names
a Topology the stack does not define; a flavor has nodeLabels and a pool's labels are unknown (a pack config pool
without `labels`, the legacy `capacity`); the legacy `flavorCapacity` (capacity by flavor name, without node labels)
is set.

Limits: each resource is judged on its own (a pod needs its cpu and its GPUs on the same node; that packing is not
modelled), and the per-node fit of single pods is other rules' (INFERENCE_FITS_NOMINAL, TRAINING_RUNTIME_FITS_QUEUE).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional, Sequence

from .vocabulary.declaration import Declaration, Level, Option, Promise, Scope, mapping
from .vocabulary.node_pools import NodePool, legacy_pool, parse_node_pools
from .vocabulary.objects import KubeObject, unknown_violation, violation
from .vocabulary.quantity import is_binary, parse, show
from .vocabulary.quota import QuotaEntry, quota_entries
from .vocabulary.values import MISSING, UnknownValueError, Violation, as_list, as_map, get

_SHOWN = 5
"""How many reservations a message lists by name (the rest are counted)."""


@dataclass
class _Reserved:
    """The nominalQuota of one (flavor, resource) over the whole stack."""

    total: Decimal = Decimal(0)
    count: int = 0
    parts: list[str] = field(default_factory=list)  # the first _SHOWN reservations, "ClusterQueue 'x' 4"
    largest: Optional[tuple[Decimal, KubeObject, QuotaEntry]] = None
    binary: bool = False


def _nominal(owner: KubeObject, entry: QuotaEntry, found: list[Violation]) -> Optional[Decimal]:
    raw = entry.field("nominalQuota")
    value = parse(raw) if raw is not MISSING else None
    if value is None:
        what = "missing" if raw is MISSING else f"{raw!r}, which is not a Kubernetes quantity"
        found.append(violation(
            owner, COHORT_NOMINAL_WITHIN_CAPACITY.name, f"{entry.path}.nominalQuota", raw,
            "nominalQuota is required and must be a Kubernetes quantity", "write a quantity such as 4 or \"8Gi\"",
            message=f"The {owner.describe()} has {entry.path}.nominalQuota {what}; set nominalQuota for resource "
            f"'{entry.resource}' of flavor '{entry.flavor}' to a quantity such as \"4\" or \"8Gi\"."))
    return value


def _reservations(objects: Sequence[KubeObject], found: list[Violation]) -> dict[str, dict[str, _Reserved]]:
    """flavor -> resource -> the nominalQuota every ClusterQueue and Cohort of the stack holds there (stack order)."""
    reserved: dict[str, dict[str, _Reserved]] = {}
    for owner in objects:
        if not (owner.is_kueue("ClusterQueue") or owner.is_kueue("Cohort")):
            continue
        try:
            for entry in quota_entries(owner):
                try:
                    value = _nominal(owner, entry, found)
                except UnknownValueError as err:
                    found.append(unknown_violation(owner, err))
                    continue
                if value is None or value <= 0:
                    continue
                raw = entry.field("nominalQuota")
                slot = reserved.setdefault(entry.flavor, {}).setdefault(entry.resource, _Reserved())
                slot.total += value
                slot.count += 1
                slot.binary = slot.binary or is_binary(raw)
                if len(slot.parts) < _SHOWN:
                    slot.parts.append(f"{owner.kind} '{owner.name}' {raw}")
                if slot.largest is None or value > slot.largest[0]:
                    slot.largest = (value, owner, entry)
        except UnknownValueError as err:
            found.append(unknown_violation(owner, err))
    return reserved


def selects(node_labels: Mapping[str, str], pool: NodePool, levels: Sequence[str] = ()) -> Optional[bool]:
    """Whether a ResourceFlavor with `node_labels` (and, for a Topology-Aware flavor, the node label keys `levels` of
    its Topology) places pods on the nodes of `pool` (Kueue 0.19.2 `pkg/util/tas/node.go` NodeMatchesFlavor: every
    nodeLabel with the same value, every level label present; `pkg/podset/podset.go` copies nodeLabels into the pods'
    nodeSelector).

    Returns True when the pool's nodes carry them all (always, for a flavor without nodeLabels or levels), False when
    one is missing, None when the flavor needs labels and the pool's labels are unknown.
    """
    if not node_labels and not levels:
        return True
    if pool.labels is None:
        return None
    return (all(pool.labels.get(key) == value for key, value in node_labels.items())
            and all(level in pool.labels for level in levels))


def _min_cut_source_side(demand: Mapping[str, Decimal], supply: Sequence[Decimal],
                         edges: Mapping[str, Sequence[int]]) -> list[str]:
    """The flavors that cannot all be served (`_flow`'s source side)."""
    return _flow(demand, supply, edges)[1]


def _flow(demand: Mapping[str, Decimal], supply: Sequence[Decimal],
          edges: Mapping[str, Sequence[int]]) -> tuple[Decimal, list[str]]:
    """The flavors that cannot all be served: a maximum flow source -> flavor (its demand) -> pool (unbounded, where
    the flavor selects the pool) -> sink (the pool's supply), Edmonds-Karp (shortest augmenting paths, so it ends for
    any Decimal capacities), then the flavors still reachable from the source in the residual network. Returns (the
    maximum flow, those flavors): none when every flavor's demand is served; otherwise, by max-flow min-cut, their
    total demand exceeds the supply of the pools they select by exactly the unserved amount. Sizes: flavors x pools,
    a handful each."""
    source, sink = ("s", ""), ("t", "")
    unbounded = sum(demand.values(), Decimal(0)) + 1
    residual: dict[tuple[str, str], dict[tuple[str, str], Decimal]] = {source: {}, sink: {}}

    def arc(a: tuple[str, str], b: tuple[str, str], amount: Decimal) -> None:
        residual.setdefault(a, {})[b] = residual.setdefault(a, {}).get(b, Decimal(0)) + amount
        residual.setdefault(b, {}).setdefault(a, Decimal(0))

    for flavor, amount in demand.items():
        arc(source, ("f", flavor), amount)
        for pool in edges.get(flavor, ()):
            arc(("f", flavor), ("p", str(pool)), unbounded)
    for pool, amount in enumerate(supply):
        arc(("p", str(pool)), sink, amount)

    def reachable() -> dict[tuple[str, str], Optional[tuple[str, str]]]:
        came: dict[tuple[str, str], Optional[tuple[str, str]]] = {source: None}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            for nxt, left in residual[node].items():
                if left > 0 and nxt not in came:
                    came[nxt] = node
                    queue.append(nxt)
        return came

    pushed = Decimal(0)
    while True:
        came = reachable()
        if sink not in came:
            return pushed, [name for kind, name in came if kind == "f"]
        path = []
        node = sink
        while came[node] is not None:
            before = came[node]
            assert before is not None
            path.append((before, node))
            node = before
        push = min(residual[a][b] for a, b in path)
        pushed += push
        for a, b in path:
            residual[a][b] -= push
            residual[b][a] += push


def _labels_text(labels: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items()) if labels else "none: every node"


def _names(kind: str, names: Sequence[str]) -> str:
    quoted = ", ".join(f"'{n}'" for n in names)
    return f"{kind} {quoted}" if len(names) == 1 else f"{kind}s {quoted}"


def _pools_text(pools: Sequence[NodePool]) -> str:
    return _names("node pool", [p.name for p in pools])


@dataclass(frozen=True)
class _Flavor:
    """A flavor as the model needs it: its nodeLabels and the ResourceFlavor object (None: from the options)."""

    name: str
    labels: Mapping[str, str]
    obj: Optional[KubeObject]
    levels: tuple[str, ...] = ()


def _flavors(objects: Sequence[KubeObject], wanted: Iterable[str], declared: Mapping[str, Any],
             reserved: Mapping[str, Mapping[str, _Reserved]], found: list[Violation]) -> dict[str, _Flavor]:
    """The flavors the quota names, with their nodeLabels: the stack's ResourceFlavor objects first, else the
    `flavorNodeLabels` option. A flavor neither defines, or whose nodeLabels are unknown, is reported and left out."""
    wanted = list(wanted)
    objs: dict[str, KubeObject] = {}
    topologies: dict[str, KubeObject] = {}
    for obj in objects:
        if obj.is_kueue("ResourceFlavor") or obj.is_kueue("Topology"):
            try:
                (objs if obj.kind == "ResourceFlavor" else topologies).setdefault(obj.name, obj)
            except UnknownValueError as err:
                found.append(unknown_violation(obj, err))
    out: dict[str, _Flavor] = {}
    for name in wanted:
        flavor = objs.get(name)
        if flavor is not None:
            try:
                labels = {str(k): str(v) for k, v in as_map(get(flavor.spec, "nodeLabels")).items()}
                levels = _levels(flavor, topologies, found)
            except UnknownValueError as err:
                found.append(unknown_violation(flavor, err))
                continue
            if levels is not None:
                out[name] = _Flavor(name, labels, flavor, levels)
        elif isinstance(declared.get(name), Mapping):
            out[name] = _Flavor(name, {str(k): str(v) for k, v in declared[name].items()}, None)
        else:
            owner, entry = _largest(reserved[name].values())
            found.append(violation(
                owner, COHORT_NOMINAL_WITHIN_CAPACITY.name, entry.path.rsplit(".resources[", 1)[0] + ".name", name,
                f"the quota names ResourceFlavor '{name}', which neither the stack nor the policy config "
                "(flavorNodeLabels) defines, so the nodes it stands for are unknown (Kueue keeps the ClusterQueue "
                "inactive until the flavor exists, then places its pods by that flavor's nodeLabels)",
                f"declare the ResourceFlavor '{name}' in the stack, or give its nodeLabels in the "
                f"{COHORT_NOMINAL_WITHIN_CAPACITY.name} config flavorNodeLabels"))
    return out


def _levels(flavor: KubeObject, topologies: Mapping[str, KubeObject], found: list[Violation]
            ) -> Optional[tuple[str, ...]]:
    """The node label keys a Topology-Aware flavor's nodes must carry: the `spec.levels[].nodeLabel` of the Topology
    its `spec.topologyName` names (Kueue 0.19.2 `apis/kueue/v1beta2/topology_types.go`; `pkg/cache/scheduler/
    tas_flavor.go` finds the flavor's nodes by nodeLabels and levels); () without topologyName; None (reported) when
    the stack does not define that Topology. Raises UnknownValueError for a value unknown at preview."""
    topology = get(flavor.spec, "topologyName")
    if topology is MISSING:
        return ()
    obj = topologies.get(str(topology))
    if obj is None:
        found.append(violation(
            flavor, COHORT_NOMINAL_WITHIN_CAPACITY.name, "spec.topologyName", topology,
            f"the flavor is Topology-Aware: it selects only nodes that carry every level label of Topology "
            f"'{topology}', which the stack does not define, so its nodes cannot be told",
            f"declare the Topology '{topology}' in the stack, or drop topologyName"))
        return None
    try:
        return tuple(str(get(level, "nodeLabel")) for level in as_list(get(obj.spec, "levels")))
    except UnknownValueError as err:
        found.append(unknown_violation(obj, err))
        return None


def flavor_pools(objects: Sequence[KubeObject], pools: Sequence[NodePool]) -> dict[str, Optional[list[NodePool]]]:
    """The nodes each ResourceFlavor of the stack stands for, as this model reads them (`selects`: nodeLabels, and a
    Topology-Aware flavor's level labels): flavor name -> the pools it selects, or None when that cannot be told
    (labels or Topology unknown; this rule reports why). For the rules that place pods on those nodes
    (PODS_FIT_NODES)."""
    ignored: list[Violation] = []
    names = []
    for obj in objects:
        if obj.is_kueue("ResourceFlavor"):
            try:
                names.append(obj.name)
            except UnknownValueError:
                continue  # reported by this rule (fail closed)
    out: dict[str, Optional[list[NodePool]]] = {}
    for name, flavor in _flavors(objects, names, {}, {}, ignored).items():
        picks = [selects(flavor.labels, pool, flavor.levels) for pool in pools]
        out[name] = None if None in picks else [p for p, pick in zip(pools, picks, strict=True) if pick]
    return out


def check_cohort_nominal_within_capacity(objects: Iterable[KubeObject], pools: Sequence[NodePool],
                                         flavor_node_labels: Optional[Mapping[str, Any]] = None,
                                         config_problems: Sequence[str] = ()) -> list[Violation]:
    """COHORT_NOMINAL_WITHIN_CAPACITY: per resource, the nominalQuota of every ClusterQueue and Cohort of the stack
    (all cohort trees, queues in no cohort) fits, flavor by flavor, the capacity of the nodes each ResourceFlavor
    selects by its nodeLabels, flavors that select the same nodes sharing them (see the module docstring).

    Args:
        objects: every Kubernetes object of the stack (ClusterQueues, Cohorts and ResourceFlavors of any Kueue
            version are read).
        pools: the cluster's node pools (`stack_capacity.parse_node_pools`): labels and capacity per node.
        flavor_node_labels: flavor -> nodeLabels for flavors the stack does not define (policy config
            `flavorNodeLabels`).
        config_problems: sentences about unreadable policy config, each reported as a violation (fail closed).
    Returns:
        Violations for: a flavor with quota whose nodeLabels no pool carries (on the ResourceFlavor's
        spec.nodeLabels when the stack defines it); a set of flavors whose quota exceeds the nodes they select (on
        the largest reservation); a resource no selected pool declares; a quota naming an undefined flavor; a flavor
        with nodeLabels next to a pool of unknown labels; an unparsable nominalQuota; a value unknown at preview.
    """
    objects = list(objects)
    found: list[Violation] = [Violation(f"The {COHORT_NOMINAL_WITHIN_CAPACITY.name} policy config is unusable: "
                                        f"{problem}; the quota it would hold fails. Write each pool as "
                                        "{name, count, labels, capacity}.",
                                        rule=problem, fix="write each pool as {name, count, labels, capacity}",
                                        policy=COHORT_NOMINAL_WITHIN_CAPACITY.name)
                              for problem in config_problems]
    reserved = _reservations(objects, found)
    flavors = _flavors(objects, reserved, flavor_node_labels or {}, reserved, found)

    edges: dict[str, list[int]] = {}
    for name, flavor in flavors.items():
        picks = [selects(flavor.labels, pool, flavor.levels) for pool in pools]
        if None in picks:
            unknown = [pool for pool, pick in zip(pools, picks, strict=True) if pick is None]
            found.append(_undecidable(flavor, unknown, reserved[name]))
            continue
        edges[name] = [i for i, pick in enumerate(picks) if pick]
        if not edges[name]:
            found.append(_no_nodes(flavor, pools, reserved[name]))

    resources = list(dict.fromkeys(r for name in edges if edges[name] for r in reserved[name]))
    for resource in resources:
        demand = {name: reserved[name][resource].total for name in edges
                  if edges[name] and resource in reserved[name]}
        supply = [pool.total(resource) for pool in pools]
        short = _min_cut_source_side(demand, supply, edges)
        for group in _groups(short, edges):
            found.append(_over(resource, group, flavors, pools, edges, reserved))
        found += _taken(resource, demand, supply, edges, set(short), flavors, pools, reserved)
    return found


def _taken(resource: str, demand: Mapping[str, Decimal], supply: Sequence[Decimal],
           edges: Mapping[str, Sequence[int]], reported: set[str], flavors: Mapping[str, _Flavor],
           pools: Sequence[NodePool], reserved: Mapping[str, Mapping[str, _Reserved]]) -> list[Violation]:
    """The adversarial placement: the kube-scheduler places an admitted pod on ANY node its flavor selects (Kueue
    copies only the flavor's nodeLabels into its nodeSelector; nothing keeps it off another flavor's nodes), so the
    pods of the other flavors may fill the nodes they share with a flavor first. A flavor's quota holds only when it
    fits its nodes minus the most the other flavors' quota can place there: demand(f) + maxflow(other flavors'
    demand -> the pools of f they select) <= supply(pools of f). One violation per flavor that fails (flavors the
    cooperative check already reported are skipped), at the nodeLabels of the flavor that takes the most of them."""
    out: list[Violation] = []
    for name, amount in demand.items():
        if name in reported or not edges.get(name):
            continue
        mine = set(edges[name])
        others = {g: d for g, d in demand.items() if g != name and mine & set(edges.get(g, ()))}
        if not others:
            continue
        shared = {g: [i for i in edges[g] if i in mine] for g in others}
        taken, _ = _flow(others, supply, shared)
        have = sum((supply[i] for i in mine), Decimal(0))
        if amount + taken <= have:
            continue
        worst = max(others, key=lambda g: (min(others[g], sum((supply[i] for i in shared[g]), Decimal(0))), g))
        slots = reserved[name]
        binary = slots[resource].binary or any(resource in p.binary for p in pools)
        common = [pools[i] for i in sorted(set(edges[worst]) & mine)]
        rule = (f"ResourceFlavor '{worst}' (nodeLabels {_labels_text(flavors[worst].labels)}) also selects "
                f"{_pools_text(common)} of flavor '{name}' (nodeLabels {_labels_text(flavors[name].labels)}), and the "
                f"kube-scheduler may place its admitted pods on any node it selects: the other flavors' nominalQuota "
                f"can take {show(taken, binary)} of '{resource}' there, which leaves flavor '{name}' "
                f"{show(max(have - taken, Decimal(0)), binary)} of the {show(amount, binary)} it reserves "
                f"({_holders([slots[resource]])}), so its pods are admitted against nodes another flavor's pods hold")
        fix = (f"give ResourceFlavor '{worst}' nodeLabels that select none of the nodes of flavor '{name}' (flavors "
               f"must select disjoint nodes), or lower the nominalQuota of '{resource}' in flavor '{name}' to at most "
               f"{show(max(have - taken, Decimal(0)), binary)}")
        out.append(_at_flavor_or_quota(flavors[worst], reserved[worst], rule, fix))
    return out


def _groups(names: Sequence[str], edges: Mapping[str, Sequence[int]]) -> list[list[str]]:
    """`names` split into groups of flavors connected through pools they both select (stack order kept)."""
    groups: list[tuple[set[int], list[str]]] = []
    for name in names:
        pools = set(edges[name])
        joined = [g for g in groups if g[0] & pools]
        merged = (pools.union(*(g[0] for g in joined)), [n for g in joined for n in g[1]] + [name])
        groups = [g for g in groups if not any(g is j for j in joined)] + [merged]
    order = {name: i for i, name in enumerate(edges)}
    return sorted((sorted(g[1], key=order.__getitem__) for g in groups), key=lambda g: order[g[0]])


def _largest(slots: Iterable[_Reserved]) -> tuple[KubeObject, QuotaEntry]:
    best = max((s.largest for s in slots if s.largest is not None), key=lambda item: item[0])
    return best[1], best[2]


def _held(slots: Mapping[str, _Reserved], pools: Sequence[NodePool]) -> str:
    return ", ".join(f"{show(s.total, s.binary or any(r in p.binary for p in pools))} of '{r}'"
                     for r, s in slots.items())


def _at_flavor_or_quota(flavor: Optional[_Flavor], slots: Mapping[str, _Reserved], rule: str, fix: str) -> Violation:
    """The finding at the ResourceFlavor's `spec.nodeLabels` when the flavor is an object of the stack, else at the
    `nominalQuota` of the largest reservation of it (the one field a user would change first)."""
    if flavor is not None and flavor.obj is not None:
        return violation(flavor.obj, COHORT_NOMINAL_WITHIN_CAPACITY.name,
                         "spec.nodeLabels", dict(flavor.labels), rule, fix)
    owner, entry = _largest(slots.values())
    return violation(owner, COHORT_NOMINAL_WITHIN_CAPACITY.name,
                     f"{entry.path}.nominalQuota", entry.field("nominalQuota"), rule, fix)


def _undecidable(flavor: _Flavor, unknown: Sequence[NodePool], slots: Mapping[str, _Reserved]) -> Violation:
    rule = (f"ResourceFlavor '{flavor.name}' selects nodes labelled {_labels_text(flavor.labels)}, and the policy "
            f"config gives {_pools_text(unknown)} ({', '.join(p.where for p in unknown)}) without node labels, so "
            f"whether its {_held(slots, unknown)} in nominalQuota has nodes cannot be decided")
    fix = (f"describe the nodes in the {COHORT_NOMINAL_WITHIN_CAPACITY.name} config nodePools with their labels "
           "(kueue-cohorts validate --stack NAME --pack-config --write generates them from the stack file)")
    return _at_flavor_or_quota(flavor, slots, rule, fix)


def _holders(slots: Iterable[_Reserved]) -> str:
    """The owners of the reservations, each once ("ClusterQueue 'a', Cohort 'c' and 3 more")."""
    slots = list(slots)
    owners = list(dict.fromkeys(part.rsplit(" ", 1)[0] for s in slots for part in s.parts))
    # `parts` keeps only the first _SHOWN reservations of each resource; `count` counts them all (one per owner)
    more = max((s.count for s in slots), default=0) - len(owners[:_SHOWN])
    return ", ".join(owners[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _no_nodes(flavor: _Flavor, pools: Sequence[NodePool], slots: Mapping[str, _Reserved]) -> Violation:
    parts = _holders(slots.values())
    if not pools:
        rule = (f"no node pool is declared, so the {_held(slots, pools)} ResourceFlavor '{flavor.name}' holds in "
                f"nominalQuota ({parts}) cannot be checked and fails")
        fix = (f"declare the nodes in kueue-cohorts:nodePools (or the {COHORT_NOMINAL_WITHIN_CAPACITY.name} config "
               "nodePools)")
        return _at_flavor_or_quota(None, slots, rule, fix)
    named = [p for p in pools if p.resource_flavor == flavor.name]
    hint = (f" ({_pools_text(named)} names resourceFlavor '{flavor.name}' but lacks these labels: Kueue places pods by "
            "labels, not by the pool's name)" if named else "")
    levels = f"the Topology level labels {', '.join(flavor.levels)}" if flavor.levels else ""
    if flavor.labels:  # a Topology-Aware flavor without nodeLabels selects by its Topology's level labels alone
        wanted = f"the labels {_labels_text(flavor.labels)}" + (f" and {levels}" if levels else "")
        selects = f"nodes labelled {_labels_text(flavor.labels)}" + (f" with {levels}" if levels else "")
    else:
        wanted, selects = levels, f"the nodes with {levels}"
    rule = (f"ResourceFlavor '{flavor.name}' selects {selects}, which no node pool carries{hint}, so the "
            f"{_held(slots, pools)} it holds in nominalQuota ({parts}) has no nodes")
    fix = (f"put {wanted} on the node pool of those nodes (kueue-cohorts:nodePools[].labels), or set the flavor's "
           "nodeLabels to labels its nodes carry")
    return _at_flavor_or_quota(flavor, slots, rule, fix)


def _over(resource: str, group: Sequence[str], flavors: Mapping[str, _Flavor], pools: Sequence[NodePool],
          edges: Mapping[str, Sequence[int]], reserved: Mapping[str, Mapping[str, _Reserved]]) -> Violation:
    """The violation for a group of flavors whose quota of `resource` exceeds the nodes they select."""
    slots = [reserved[name][resource] for name in group if resource in reserved[name]]
    selected = [pools[i] for i in sorted({i for name in group for i in edges[name]})]
    binary = any(s.binary for s in slots) or any(resource in p.binary for p in selected)
    total = sum((s.total for s in slots), Decimal(0))
    limit = sum((p.total(resource) for p in selected), Decimal(0))
    count = sum(s.count for s in slots)
    shown = [part for name in group if resource in reserved[name]
             for part in (reserved[name][resource].parts if len(group) == 1 else
                          [f"{p} in '{name}'" for p in reserved[name][resource].parts])][:_SHOWN]
    parts = ", ".join(shown) + (f" and {count - len(shown)} more" if count > len(shown) else "")
    owner, entry = _largest(slots)
    what = _names("ResourceFlavor", list(group))
    labels = "; ".join(f"'{n}': {_labels_text(flavors[n].labels)}" for n in group)
    if limit == 0:
        rule = (f"{what} reserve{'s' if len(group) == 1 else ''} {show(total, binary)} of '{resource}' in "
                f"nominalQuota ({parts}) but none of the nodes {'it selects' if len(group) == 1 else 'they select'} "
                f"({_pools_text(selected)}) declares '{resource}'")
        fix = (f"add '{resource}' to the capacity of {_pools_text(selected)} (kueue-cohorts:nodePools), or drop the "
               "resource from the quota")
    elif len(group) == 1:
        rule = (f"the nominalQuota of {what} over every ClusterQueue and Cohort of the stack sums to "
                f"{show(total, binary)} of '{resource}' ({parts}), above the {show(limit, binary)} of the nodes it "
                f"selects ({_pools_text(selected)}; nodeLabels {_labels_text(flavors[group[0]].labels)}): "
                "reservations are guarantees and must exist on the nodes Kueue places their pods on")
        fix = (f"lower the nominalQuota of '{resource}' in flavor '{group[0]}' to at most {show(limit, binary)} in "
               "total over every cohort, or add nodes" + (" that carry its nodeLabels" if flavors[group[0]].labels
                                                           else ""))
    else:
        rule = (f"{what} select the same nodes ({_pools_text(selected)}; nodeLabels {labels}), so they share them: "
                f"their nominalQuota over every ClusterQueue and Cohort of the stack sums to {show(total, binary)} "
                f"of '{resource}' ({parts}), above the {show(limit, binary)} those nodes have")
        fix = (f"lower the nominalQuota of '{resource}' in flavors {', '.join(repr(n) for n in group)} to at most "
               f"{show(limit, binary)} together, or give each flavor nodeLabels that select nodes of its own")
    return violation(owner, COHORT_NOMINAL_WITHIN_CAPACITY.name,
                     f"{entry.path}.nominalQuota", entry.field("nominalQuota"), rule, fix)


def check_capacity_options(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    """The rule as the book calls it: read the nodes from `options` (`nodePools`, else the legacy `capacity` as
    one pool of unknown labels; `flavorNodeLabels`; the legacy `flavorCapacity` fails closed) and judge `objects`.

    Args:
        objects: every object of the stack. options: the policy's config section (its options below).
    Returns:
        The violations of `check_cohort_nominal_within_capacity`, plus one per unusable option.
    """
    raw_pools = NODE_POOLS.read(options)
    if raw_pools:
        pools, problems = parse_node_pools(list(raw_pools))
    else:
        pools, problems = legacy_pool(LEGACY_CAPACITY.read(options) or {})
    legacy = LEGACY_FLAVOR_CAPACITY.read(options)
    if legacy:
        problems = [*problems, f"flavorCapacity gives capacity by ResourceFlavor name ({', '.join(legacy)}) without "
                    "node labels, while Kueue places a flavor's pods by its nodeLabels, so the nodes each flavor "
                    "may use cannot be told; move them to nodePools with their labels"]
    return check_cohort_nominal_within_capacity(objects, pools, FLAVOR_NODE_LABELS.read(options),
                                                problems)


NODE_POOLS: Option[list[Any]] = Option(
    "nodePools", {"type": "array", "items": {"type": "object"}}, [],
    "The cluster's nodes: a list of {name, count, labels, capacity} (capacity per node, resource -> quantity; "
    "labels: the nodes' labels, which decide the ResourceFlavors that select them). Generated from "
    "kueue-cohorts:nodePools. A pool without labels has unknown labels: a flavor with nodeLabels then fails closed. "
    "Empty: the legacy capacity, else the stack's kueue-cohorts:nodePools.")
WORKER_NODE_POOLS = mapping(
    "workerNodePools", {"type": "array", "items": {"type": "object"}},
    "MultiKueue worker name -> its nodes (as nodePools): the objects of provider k8s-worker-<name> are judged "
    "against them. Generated from kueue-cohorts:multiKueue.workers[].nodePools; a worker without an entry takes those "
    "of the stack config, else the stack's own nodes.")
FLAVOR_NODE_LABELS = mapping(
    "flavorNodeLabels", {"type": "object", "additionalProperties": {"type": "string"}},
    "ResourceFlavor name -> nodeLabels, for flavors the stack's quota names but another program defines (the "
    "stack's own ResourceFlavor objects win).")
LEGACY_CAPACITY = mapping(
    "capacity", {"type": ["string", "number"]},
    "Legacy: the cluster's total per resource (e.g. {\"cpu\": \"8\"}), used only without nodePools, as one pool whose "
    "labels are unknown: only a ResourceFlavor without nodeLabels can be judged against it.")
LEGACY_FLAVOR_CAPACITY = mapping(
    "flavorCapacity", {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
    "Legacy, refused: capacity by ResourceFlavor name carries no node labels, while Kueue places a flavor's pods by "
    "its nodeLabels. Any entry fails the policy; use nodePools.")

COHORT_NOMINAL_WITHIN_CAPACITY: Declaration = Declaration(
    name="cohort-nominal-within-capacity",
    description="The nominalQuota of every ClusterQueue and Cohort of the stack fits, per ResourceFlavor, the nodes "
                "that flavor selects by its nodeLabels (flavors that select the same nodes share them).",
    promise=Promise.GPUS_EXIST, level=Level.MANDATORY, scope=Scope.STACK,
    check=check_capacity_options,
    options=(NODE_POOLS, WORKER_NODE_POOLS, FLAVOR_NODE_LABELS, LEGACY_CAPACITY, LEGACY_FLAVOR_CAPACITY))
