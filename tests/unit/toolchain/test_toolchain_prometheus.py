"""The pinned Prometheus and promtool (toolchain/versions.toml [binaries.prometheus], issue 31 item 5): built from the
Go module with the build tag `remove_all_sd`, so the cloud service discoveries are out and the static one is in,
and stamped with the pinned version."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kueue_cohorts import toolchain
from kueue_cohorts.toolchain import paths
from kueue_cohorts.toolchain.versions import load


@pytest.fixture(scope="module")
def built() -> dict[str, Path]:
    return toolchain.ensure(["prometheus", "promtool"])


def test_the_entry_pins_the_module_and_its_tags():
    entry = load().entries["prometheus"]
    assert entry.outputs == ("prometheus", "promtool")
    assert entry.module_version == f"v0.{3 * 100 + int(entry.version.split('.')[1])}.{entry.version.split('.')[2]}"
    assert entry.tags == ("remove_all_sd",)


def test_both_binaries_report_the_pinned_version(built):
    version = load().entries["prometheus"].version
    for name in ("prometheus", "promtool"):
        out = subprocess.run([str(built[name]), "--version"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and f"version {version}" in out.stdout + out.stderr, out
        record = json.loads((paths.bin_dir(name, version) / "build.json").read_text())
        assert record["tags"] == ["remove_all_sd"]


def _check_config(promtool: Path, tmp_path: Path, scrape: str) -> subprocess.CompletedProcess:
    config = tmp_path / "prometheus.yml"
    config.write_text(f"scrape_configs:\n  - job_name: x\n{scrape}")
    return subprocess.run([str(promtool), "check", "config", str(config)], capture_output=True, text=True, timeout=30)


def test_the_cloud_discoveries_are_left_out_and_static_targets_stay(built, tmp_path):
    static = _check_config(built["promtool"], tmp_path, "    static_configs: [{targets: ['127.0.0.1:1']}]\n")
    assert static.returncode == 0, static.stdout + static.stderr
    ec2 = _check_config(built["promtool"], tmp_path, "    ec2_sd_configs: [{region: eu-west-1}]\n")
    assert ec2.returncode != 0 and "ec2_sd_configs" in ec2.stdout + ec2.stderr
