"""The trainer's metrics (trainer/metrics.py, issue 31 item 1): checkpoint age, steps lost at the last preemption and
flush seconds in Prometheus' text format, read back with the official client's parser from the endpoint of a real
training process that is killed and resumed."""
from __future__ import annotations

import signal
import urllib.request
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kueue_cohorts.trainer.entrypoint import PREEMPTED_EXIT_CODE, ConfigError, parse_args
from kueue_cohorts.trainer.local.process import free_port, start
from kueue_cohorts.trainer.metrics import PROGRESS_FILE, TrainerMetrics, read_progress, steps_lost, write_progress

KNOBS = {
    "KUEUE_COHORTS_DEMO_MAX_STEPS": "30",
    "KUEUE_COHORTS_DEMO_SAVE_STEPS": "10",
}


def samples(text: str) -> dict[str, float]:
    """name (with _count/_sum for histograms) -> value, for the unlabelled samples of an exposition."""
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
            if not s.labels}


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return samples(response.read().decode())


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@given(progress=st.none() | st.integers(0, 10**6), resumed=st.none() | st.integers(0, 10**6))
def test_steps_lost_are_the_steps_beyond_the_resumed_checkpoint(progress, resumed):
    lost = steps_lost(progress, resumed)
    assert lost >= 0
    if progress is None:
        assert lost == 0
    elif progress >= (resumed or 0):
        assert lost == progress - (resumed or 0)


def test_age_flush_and_steps_as_exposed(tmp_path):
    clock = Clock()
    write_progress(tmp_path, 57, 0.0)
    metrics = TrainerMetrics(tmp_path, clock=clock)
    assert metrics.resumed(50) == 7
    clock.now += 30
    metrics.step(51)
    first = samples(generate_latest(metrics.registry).decode())
    assert first["kueue_cohorts_trainer_checkpoint_age_seconds"] == 30  # nothing saved yet: since the start
    assert first["kueue_cohorts_trainer_steps_lost_at_last_preemption"] == 7
    assert first["kueue_cohorts_trainer_checkpoint_step"] == 50
    assert read_progress(tmp_path) == 51
    metrics.saved(60, 0.25)
    clock.now += 12
    second = samples(generate_latest(metrics.registry).decode())
    assert second["kueue_cohorts_trainer_checkpoint_age_seconds"] == 12
    assert second["kueue_cohorts_trainer_last_checkpoint_timestamp_seconds"] == 1030
    assert second["kueue_cohorts_trainer_checkpoint_flush_seconds_count"] == 1
    assert second["kueue_cohorts_trainer_checkpoint_flush_seconds_sum"] == 0.25
    assert second["kueue_cohorts_trainer_checkpoint_step"] == 60 and read_progress(tmp_path) == 60


def test_a_marker_cut_short_counts_as_none(tmp_path):
    (tmp_path / PROGRESS_FILE).write_text('{"global_st')
    assert read_progress(tmp_path) is None
    assert TrainerMetrics(tmp_path).resumed(None) == 0


def test_a_bad_port_is_a_config_error():
    env = {"KUEUE_COHORTS_CHECKPOINT_ROOT": "/x", "KUEUE_COHORTS_RUN_NAME": "r"}
    for bad in ("http", "-1", "70000"):
        try:
            parse_args([], {**env, "KUEUE_COHORTS_METRICS_PORT": bad})
        except ConfigError as err:
            assert "KUEUE_COHORTS_METRICS_PORT" in str(err)
        else:
            raise AssertionError(bad)
    assert parse_args([], {**env, "KUEUE_COHORTS_METRICS_PORT": "9400"}).metrics_port == 9400
    assert parse_args([], env).metrics_port is None


def test_a_killed_run_reports_its_lost_steps_when_it_resumes(tmp_path: Path):
    port = free_port()
    first = start(tmp_path, "run", KUEUE_COHORTS_TEST_HOLD="step:12", KUEUE_COHORTS_METRICS_PORT=str(port), **KNOBS)
    first.wait_for(r"^HOLD step 12$")  # steps 11 and 12 done after checkpoint-10
    held = scrape(port)
    assert held["kueue_cohorts_trainer_global_step"] == 12
    assert held["kueue_cohorts_trainer_checkpoint_step"] == 10
    assert held["kueue_cohorts_trainer_checkpoint_flush_seconds_count"] == 1
    assert held["kueue_cohorts_trainer_last_checkpoint_timestamp_seconds"] > 0
    assert held["kueue_cohorts_trainer_steps_lost_at_last_preemption"] == 0
    first.send(signal.SIGKILL)  # a hard stop: no save at 12
    first.wait()

    port = free_port()
    second = start(tmp_path, "run", KUEUE_COHORTS_TEST_HOLD="step:20", KUEUE_COHORTS_METRICS_PORT=str(port), **KNOBS)
    second.wait_for(r"^HOLD step 20$")
    resumed = scrape(port)
    assert resumed["kueue_cohorts_trainer_steps_lost_at_last_preemption"] == 2  # 11 and 12, done again
    assert resumed["kueue_cohorts_trainer_checkpoint_step"] == 20
    assert resumed["kueue_cohorts_trainer_global_step"] == 20
    assert any("reached 2 steps beyond this checkpoint" in line for line in second.ours())
    second.send(signal.SIGTERM)  # graceful: saves where it is and loses nothing
    assert second.wait() == PREEMPTED_EXIT_CODE, second.log()
