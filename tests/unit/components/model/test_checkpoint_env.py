"""deploy.engine.checkpoint_env: per-step state checkpoints are skipped on self-managed backends only, and a
PULUMI_SKIP_CHECKPOINTS set by the caller always wins."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.deploy import engine

PATHS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_/.", min_size=1, max_size=40)


@given(scheme=st.sampled_from(["file://", "s3://", "gs://", "azblob://"]), path=PATHS)
def test_self_managed_backends_write_the_state_once(scheme, path):
    assert engine.checkpoint_env(scheme + path, environ={}) == {"PULUMI_SKIP_CHECKPOINTS": "true"}


@pytest.mark.parametrize("url", ["https://api.pulumi.com", "https://pulumi.example.internal/api", "http://localhost:8080"])
def test_pulumi_cloud_keeps_its_journal(url):
    assert engine.checkpoint_env(url, environ={}) == {}


@pytest.mark.parametrize("value", ["false", "0", "true", ""])
@pytest.mark.parametrize("url", ["file:///tmp/state", "s3://bucket/prefix", "https://api.pulumi.com"])
def test_the_callers_setting_wins(url, value):
    assert engine.checkpoint_env(url, environ={"PULUMI_SKIP_CHECKPOINTS": value}) == {}

