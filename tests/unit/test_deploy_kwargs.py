"""deploy.engine.run_kwargs: the policy pack goes to preview and up only (refresh and destroy have no such flag)."""

from types import SimpleNamespace

import pytest

from deploy import engine


def _stack(tmp_path, name="dev"):
    return SimpleNamespace(name=name, workspace=SimpleNamespace(work_dir=str(tmp_path)))


@pytest.mark.parametrize("operation", ["preview", "up"])
def test_preview_and_up_get_the_pack_and_its_stack_config(tmp_path, operation):
    kwargs = engine.run_kwargs(_stack(tmp_path), operation=operation)
    assert kwargs["policy_packs"] == [str(engine.policy_pack_dir())]
    assert kwargs["policy_pack_configs"] == [str(engine.policy_pack_dir() / "config" / "dev.json")]
    assert kwargs["config_file"] == str(tmp_path / "stacks" / "Pulumi.dev.yaml")


@pytest.mark.parametrize("operation", ["refresh", "destroy"])
def test_refresh_and_destroy_get_no_policy_arguments(tmp_path, operation):
    kwargs = engine.run_kwargs(_stack(tmp_path), operation=operation)
    assert "policy_packs" not in kwargs and "policy_pack_configs" not in kwargs
    assert kwargs["config_file"] == str(tmp_path / "stacks" / "Pulumi.dev.yaml")
