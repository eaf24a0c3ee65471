"""The base side from git: stack file at a ref, tree export, and the quota tables of a floor change (no CLI)."""
from __future__ import annotations

import pytest

from kueue_cohorts.prsummary import cli
from kueue_cohorts.whatif import gitbase


def pin_cpu_borrowing(repo) -> None:
    """Give both research tenants an explicit cpu borrowingLimit, so a cpu floor change derives nothing else."""
    pool = repo.config("staging")["sharedPool"]
    for tenant in pool["tenants"]:
        tenant["borrowingLimit"] = {**tenant.get("borrowingLimit", {}), "cpu": "4"}
    repo.set_config("staging", "sharedPool", pool)


def raise_vision_cpu_floor(repo, value: str = "6") -> None:
    pool = repo.config("staging")["sharedPool"]
    pool["tenants"][0]["floor"]["cpu"] = value
    repo.set_config("staging", "sharedPool", pool)


def test_file_at_and_missing_file_and_unknown_ref(repo):
    base = repo.commit()
    assert "kueue-cohorts:sharedPool" in gitbase.file_at(repo.path, base, "stacks/Pulumi.staging.yaml")
    assert gitbase.file_at(repo.path, "HEAD", "stacks/Pulumi.nope.yaml") is None
    with pytest.raises(gitbase.GitError):
        gitbase.file_at(repo.path, "no-such-ref", "stacks/Pulumi.staging.yaml")


def test_export_tree_writes_the_base_files_not_the_working_tree(repo, tmp_path):
    base = repo.commit()
    raise_vision_cpu_floor(repo)
    out = gitbase.export_tree(repo.path, base, tmp_path / "export")
    assert (out / "__main__.py").is_file() and (out / "kueue_cohorts" / "components" / "model" / "plans.py").is_file()
    assert (out / "stacks" / "Pulumi.staging.yaml").read_text() != repo.stack_file("staging").read_text()


def test_floor_change_shows_exactly_that_cell(repo):
    pin_cpu_borrowing(repo)
    repo.commit()
    raise_vision_cpu_floor(repo)
    side = cli.quota_side(repo.path, "staging", "HEAD")
    assert side.before_error is None and side.after_error is None and not side.base_missing
    changed = {t.cohort: t.changed_cells() for t in side.tables}
    assert changed == {"serving": set(), "research": {("team-vision-cq", "cpu", "nominalQuota")}}
    text = cli.summarize(repo.path, "staging", "HEAD", run_preview=False)[0]
    bold = [line for line in text.splitlines() if line.startswith("|") and "**" in line]
    assert bold == ["| `team-vision-cq` (tenant) | `cpu` | **4 → 6** | 4 | – |"]


def test_unchanged_working_tree_has_no_quota_change(repo):
    repo.commit()
    side = cli.quota_side(repo.path, "prod", "HEAD")
    assert not side.changed and [t.cohort for t in side.tables] == ["online", "platform"]


def test_new_stack_and_invalid_stack(repo):
    repo.commit()
    repo.stack_file("qa").write_text(repo.stack_file("staging").read_text())
    side = cli.quota_side(repo.path, "qa", "HEAD")
    assert side.base_missing and side.changed
    raise_vision_cpu_floor(repo, "-1")
    side = cli.quota_side(repo.path, "staging", "HEAD")
    assert side.after_error and "sharedPool.tenants[0].floor.cpu" in side.after_error
    assert all(t.after is None for t in side.tables)


def test_cli_exit_codes(repo, tmp_path, capsys):
    repo.commit()
    out = tmp_path / "s.md"
    assert cli.main(["--stack", "staging", "--base", "HEAD", "--repo", str(repo.path), "--no-preview",
                     "--out", str(out)]) == 0
    assert "#### Quotas" in out.read_text()
    assert cli.main(["--stack", "staging", "--base", "nope", "--repo", str(repo.path), "--no-preview"]) == 2
    assert cli.main(["--stack", "missing", "--base", "HEAD", "--repo", str(repo.path), "--no-preview"]) == 2
    assert "prsummary:" in capsys.readouterr().err


def _training_above_inference(repo) -> str:
    layout = repo.config("staging")["inferenceTraining"]
    layout["training"]["priorityClass"]["value"] = 2000
    repo.set_config("staging", "inferenceTraining", layout)
    return "inferenceTraining.training.priorityClass"


def _negative_floor(repo) -> str:
    raise_vision_cpu_floor(repo, "-1")
    return "sharedPool.tenants[0].floor.cpu"


def _misspelt_key(repo) -> str:
    pool = repo.config("staging")["sharedPool"]
    pool["tenants"][1]["flor"] = pool["tenants"][1].pop("floor")
    repo.set_config("staging", "sharedPool", pool)
    return "sharedPool.tenants[1]"


def _inference_beyond_capacity(repo) -> str:
    layout = repo.config("staging")["inferenceTraining"]
    layout["inference"]["nominalQuota"]["nvidia.com/gpu"] = "64"
    repo.set_config("staging", "inferenceTraining", layout)
    return "inferenceTraining.inference.nominalQuota"


@pytest.mark.parametrize("breaks", [_training_above_inference, _negative_floor, _misspelt_key,
                                    _inference_beyond_capacity])
def test_an_invalid_change_says_so_first_and_fails(repo, tmp_path, capsys, breaks):
    """The summary of a change whose stack file does not validate starts with a red CAUTION alert naming the key,
    shows no quota as removed and no "no violations" comfort, and the command exits 1 after writing it."""
    repo.commit()
    key = breaks(repo)
    out = tmp_path / "summary.md"
    code = cli.main(["--stack", "staging", "--base", "HEAD", "--repo", str(repo.path), "--no-preview",
                     "--out", str(out)])
    text = out.read_text()
    assert code == 1
    assert "does not validate: this change cannot be deployed" in capsys.readouterr().err
    body = text.splitlines()[3:]  # after the marker, the heading and a blank line
    assert body[0] == "> [!CAUTION]"
    assert "This change cannot be deployed: `stacks/Pulumi.staging.yaml` does not validate." in body[1]
    assert f"kueue-cohorts:{key}" in text
    assert text.index(f"kueue-cohorts:{key}") < text.index("#### Policy")
    assert "removed" not in text and "No policy violations" not in text and "→" not in text
    assert "Policy\nNot run: preview skipped (--no-preview)" in text
