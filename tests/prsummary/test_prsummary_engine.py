"""The summary through the real pulumi CLI (offline: render mode, throwaway file backends, the real policy pack).

Each test makes a temporary git repo with a copy of the project, commits it (the base), changes the working tree,
and builds the summary against HEAD: the base commit's program is `pulumi up`-ed into a file backend, then the
working tree is previewed against that state with the policy pack.
"""
from __future__ import annotations

import pytest

from kueue_cohorts import toolchain
from kueue_cohorts.prsummary import cli
from kueue_cohorts.prsummary.preview import preview_against_base
from tests.prsummary.test_prsummary_git import pin_cpu_borrowing, raise_vision_cpu_floor

pytestmark = pytest.mark.integration

CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


@pytest.fixture(scope="module", autouse=True)
def engine_binaries():
    """The pinned pulumi CLI and kubernetes provider (built if missing; a build failure fails the test)."""
    return toolchain.ensure(["pulumi", "pulumi-resource-kubernetes"])


def test_floor_change_previews_one_cluster_queue_update_and_one_quota_cell(repo):
    pin_cpu_borrowing(repo)
    repo.commit()
    raise_vision_cpu_floor(repo)
    report = preview_against_base(repo.path, "staging", "HEAD")
    assert report.errors == [] and report.violations == []
    assert [(c.op, c.type, c.name) for c in report.changes] == [("update", CQ, "shared-pool-cq-team-vision-cq")]
    assert any(p.endswith("nominalQuota") for p in report.changes[0].paths), report.changes[0].paths
    text = cli.summarize(repo.path, "staging", "HEAD")[0]
    bold = [line for line in text.splitlines() if line.startswith("|") and "**" in line]
    assert bold == ["| `team-vision-cq` (tenant) | `cpu` | **4 → 6** | 4 | – |"]
    assert "No policy violations." in text and "Summary: 1 to update." in text


def test_a_capacity_increase_in_the_stack_file_is_judged_with_it_not_with_a_stale_committed_config(repo):
    """Issue 29 item 1: the stack file declares 4 nodes (16 GPUs) and gives the research cohort 9 GPUs, while the
    committed policy/config/staging.json still says 8. The pack judges with the config generated from the stack file
    (deploy.engine.generated_pack_config), so the legitimate change is not a mandatory violation. (The order of
    violations in a summary is tested on rendered documents, test_prsummary_render.)"""
    repo.commit()
    pools = repo.config("staging")["nodePools"]
    pools[0]["count"] = 4
    repo.set_config("staging", "nodePools", pools)
    pool = repo.config("staging")["sharedPool"]
    pool["tenants"][0]["floor"]["nvidia.com/gpu"] = "7"
    repo.set_config("staging", "sharedPool", pool)
    text = cli.summarize(repo.path, "staging", "HEAD")[0]
    assert "mandatory" not in text and "No policy violations." in text, text
    assert "cohort-nominal-within-capacity" not in text
    assert "##### cohort `research` (shared-pool)" in text


def test_unchanged_stack_is_one_line(repo):
    repo.commit()
    text = cli.summarize(repo.path, "dev", "HEAD")[0]
    assert text.count("\n") == 1, text
    assert "**`dev`**: no changes against `HEAD`" in text
