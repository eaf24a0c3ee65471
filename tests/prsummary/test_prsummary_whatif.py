"""The what-if section of the summary (`make pr-summary STACK=staging BASE=<ref>`, offline): a stack with a demand
trace shows the trace replayed on the base and the head quotas, inference waiting longer called out first, and the
chart next to the summary."""
from __future__ import annotations

from kueue_cohorts.cohorts.target import load_stack
from kueue_cohorts.prsummary import cli
from kueue_cohorts.whatif.synth import synth


def _with_trace(repo, days: float = 2.0) -> None:
    settings = load_stack(repo.stack_file("staging"))
    synth(settings, seed=11, days=days).write(repo.path / "traces" / "staging.jsonl")
    repo.set_config("staging", "whatif", {"trace": "traces/staging.jsonl"})


def _lower_inference_gpus(repo, gpus: int) -> None:
    layout = repo.config("staging")["inferenceTraining"]
    layout["inference"]["nominalQuota"]["nvidia.com/gpu"] = str(gpus)
    layout["inference"]["services"][0]["maxReplicas"] = gpus
    repo.set_config("staging", "inferenceTraining", layout)


def test_a_lower_inference_quota_shows_the_what_if_section_with_the_wait_called_out(repo, tmp_path):
    _with_trace(repo)
    repo.commit()
    _lower_inference_gpus(repo, 2)
    out = tmp_path / "summary.md"
    assert cli.main(["--stack", "staging", "--base", "HEAD", "--repo", str(repo.path), "--no-preview",
                     "--out", str(out)]) == 0
    text = out.read_text()
    section = text[text.index("#### What-if"):]
    assert text.index("> **What-if**: with this change") < text.index("#### Quotas")  # called out at the top
    assert text.index("#### Quotas") < text.index("#### What-if")
    assert section.startswith("#### What-if: `traces/staging.jsonl` (")
    assert section.index("> [!CAUTION]") < section.index("| queue |")
    assert "> - inference on serving-inference-cq: " in section and "never admitted" in section
    assert "`summary.whatif.html`" in section
    assert (tmp_path / "summary.whatif.html").read_text().startswith("<!DOCTYPE html>")


def test_no_trace_no_section_and_a_missing_trace_is_one_paragraph(repo):
    repo.commit()
    _lower_inference_gpus(repo, 3)
    assert "What-if" not in cli.summarize(repo.path, "staging", "HEAD", run_preview=False)[0]
    repo.set_config("staging", "whatif", {"trace": "traces/none.jsonl"})
    text = cli.summarize(repo.path, "staging", "HEAD", run_preview=False)[0]
    assert ("#### What-if\nThe what-if replay of `traces/none.jsonl` did not run: "
            f"{repo.path / 'traces/none.jsonl'} = \"<unreadable>\": cannot be read as a trace file (No such file or "
            "directory). Fix: give the path of a JSON Lines trace") in text
