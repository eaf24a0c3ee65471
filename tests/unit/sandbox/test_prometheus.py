"""The sandbox's Prometheus (sandbox/prometheus.py): its configuration passes the pinned promtool's `check config`
with the sandbox's real certificates and the stack's rules, it listens on loopback only, and the access it is given
to Kueue's metrics is `get /metrics` and nothing else."""
from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from kueue_cohorts import toolchain
from kueue_cohorts.components.model.alerts import rules_file
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.sandbox import certs, prometheus
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.sandbox.ports import PORT_NAMES
from tests.helpers import stack_raw


def test_the_configuration_passes_promtool(tmp_path: Path):
    promtool = toolchain.ensure(["promtool"])["promtool"]
    c = certs.ensure(tmp_path / "pki")
    paths = SandboxPaths(tmp_path)
    token = prometheus.token_file(paths)
    token.parent.mkdir()
    token.write_text("a-token")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(rules_file(parse_settings(stack_raw("dev")), "dev")))
    ports = {name: 10000 + i for i, name in enumerate(PORT_NAMES)}
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus.configuration(ports, c, token, rules)))
    result = subprocess.run([str(promtool), "check", "config", str(config)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = {job["job_name"]: job for job in yaml.safe_load(config.read_text())["scrape_configs"]}
    assert jobs["kueue"]["static_configs"] == [{"targets": [f"127.0.0.1:{ports['kueue-metrics']}"]}]
    assert jobs["kueue"]["authorization"]["credentials_file"] == str(token)


def test_it_listens_on_loopback_with_its_tsdb_in_the_state_dir(tmp_path: Path):
    paths = SandboxPaths(tmp_path)
    argv = prometheus.args(Path("/bin/prometheus"), tmp_path / "p.yml", prometheus.data_dir(paths), 9999)
    assert "--web.listen-address=127.0.0.1:9999" in argv
    assert f"--storage.tsdb.path={tmp_path / 'prometheus' / 'data'}" in argv


def test_the_access_is_get_metrics_only():
    objects = {obj["kind"]: obj for _, obj in prometheus.access_objects()}
    assert objects["ClusterRole"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert objects["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": prometheus.SERVICE_ACCOUNT, "namespace": prometheus.NAMESPACE}]


def test_no_url_without_a_running_prometheus(tmp_path: Path):
    assert prometheus.url(SandboxPaths(tmp_path)) is None
