"""Independent references for the placement rules: simulations of Kueue and the kube-scheduler over every order,
every node and every choice Kueue may make, written without the product's search (`policy/rules/vocabulary/
placement.py`)."""
from __future__ import annotations

from functools import cache


def strands_after_reclaim(inference: tuple[int, int, int], training: tuple[int, int], nodes: list[tuple[int, int]],
                          quota: tuple[int, int]) -> bool:
    """The reference for the asymmetric cohort: inference (nominalQuota `quota` of (gpu, cpu), borrowingLimit 0,
    pods of `inference` = (gpu, cpu, cap)) and training (nominal 0, borrowing all of it, pods of `training`), every
    pod bound by the scheduler on any node with room. A training pod is admitted while the cohort's usage plus it
    fits the quota; an inference pod while inference's usage plus it does, and when the cohort's does not, Kueue
    preempts a minimal set of training pods chosen by quota only (any such set: the order of priority and admission
    time is the adversary's), wherever they run. Stranded: an admitted inference pod that then fits no node."""
    i_gpu, i_cpu, cap = inference
    t_gpu, t_cpu = training

    def fits(room: tuple[int, int], gpu: int, cpu: int) -> bool:
        return room[0] >= gpu and room[1] >= cpu

    @cache
    def reach(state: tuple[tuple[int, int], ...]) -> bool:  # per node: (inference pods, training pods)
        inf = sum(a for a, _ in state)
        trn = sum(b for _, b in state)
        rooms = [(g - a * i_gpu - b * t_gpu, c - a * i_cpu - b * t_cpu)
                 for (g, c), (a, b) in zip(nodes, state, strict=True)]
        used = (inf * i_gpu + trn * t_gpu, inf * i_cpu + trn * t_cpu)
        if used[0] + t_gpu <= quota[0] and used[1] + t_cpu <= quota[1]:  # one more training pod
            for k, room in enumerate(rooms):
                if fits(room, t_gpu, t_cpu) and reach(tuple((a, b + (k == n)) for n, (a, b) in enumerate(state))):
                    return True
        if inf >= cap or (inf + 1) * i_gpu > quota[0] or (inf + 1) * i_cpu > quota[1]:
            return False
        # victims: per node, how many training pods go; minimal (returning any one of them would not fit)
        options = [range(b + 1) for _, b in state]
        for evict in _product(options):
            gone = sum(evict)
            left = (used[0] + i_gpu - gone * t_gpu, used[1] + i_cpu - gone * t_cpu)
            if left[0] > quota[0] or left[1] > quota[1]:
                continue
            if gone and left[0] + t_gpu <= quota[0] and left[1] + t_cpu <= quota[1]:
                continue  # not minimal
            after = tuple((a, b - e) for (a, b), e in zip(state, evict, strict=True))
            free = [(room[0] + e * t_gpu, room[1] + e * t_cpu) for room, e in zip(rooms, evict, strict=True)]
            fitting = [k for k, room in enumerate(free) if fits(room, i_gpu, i_cpu)]
            if not fitting:
                return True
            if any(reach(tuple((a + (k == n), b) for n, (a, b) in enumerate(after))) for k in fitting):
                return True
        return False

    return reach(tuple((0, 0) for _ in nodes))


def _product(options: list[range]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for option in options:
        out = [prefix + (x,) for prefix in out for x in option]
    return out
