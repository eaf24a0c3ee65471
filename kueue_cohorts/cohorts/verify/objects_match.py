"""``objects_match``: every expected object exists and every field it renders is equal on the cluster."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference, compare_fields, compared_part
from kueue_cohorts.cohorts.verify.live import Context, ident, read


def objects_match(ctx: Context) -> list[Difference]:
    """Every expected object is on the cluster with every rendered field equal (see the module doc)."""
    out = []
    for manifest in ctx.expected:
        kind, name, ns = ident(manifest)
        live = read(ctx, manifest)
        if isinstance(live, Difference):
            out.append(live)
            continue
        for path, want, have, what, item in compare_fields(compared_part(manifest), compared_part(live)):
            out.append(Difference(kind, name, ns, path, want, have, what, item))
    return out
