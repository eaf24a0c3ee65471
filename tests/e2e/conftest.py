"""Session fixtures of the end-to-end suite: a fresh sandbox (through the same entry point as
``python -m kueue_cohorts.sandbox up``), a Kubernetes client on it, and a temporary Pulumi project whose stacks go
through the
real pulumi CLI. A sandbox that cannot start FAILS the suite: it is never skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import REPO, Cluster, sandbox_in, start_sandbox, wait_for
from kubernetes import config as kconfig

from kueue_cohorts.deploy.scratch import Project
from kueue_cohorts.sandbox.cluster import Sandbox

#: Namespaces of the dev stack whose Jobs each test removes when it ends.
DEV_NAMESPACES = ("c12-inference", "c12-training")


#: Upper bound per test (pytest-timeout), so that a hung control plane fails the suite instead of blocking CI.
TEST_TIMEOUT_S = 900


def pytest_collection_modifyitems(items):
    """Mark every test under tests/e2e with ``e2e`` and a timeout."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory) -> Sandbox:
    """A fresh sandbox in a temporary state dir, up with the dev stack's nodePools; stopped after the session
    (its logs stay in the temporary directory). Fails when it cannot start."""
    with sandbox_in(tmp_path_factory.mktemp("sandbox")) as box:
        start_sandbox(box)
        yield box


@pytest.fixture(scope="session")
def cluster(sandbox) -> Cluster:
    """Kubernetes client APIs on the sandbox (admin kubeconfig)."""
    return Cluster(kconfig.new_client_from_config(config_file=str(sandbox.paths.kubeconfig)))


@pytest.fixture(scope="session")
def project(tmp_path_factory) -> Project:
    """A temporary copy of the Pulumi project with its own file backend."""
    return Project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="session")
def dev_stack(sandbox, project) -> str:
    """The repository's dev stack applied with ``pulumi up`` (kept for the session); returns its name."""
    project.add_stack("dev", REPO / "stacks" / "Pulumi.dev.yaml")
    project.run("dev", "up")
    return "dev"


@pytest.fixture
def clean_dev_jobs(cluster, dev_stack):
    """Delete every Job of the dev stack's namespaces after the test, and wait until their Workloads are gone."""
    yield
    for ns in DEV_NAMESPACES:
        for job in cluster.batch.list_namespaced_job(ns).items:
            cluster.delete_job(job)
    for ns in DEV_NAMESPACES:
        wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), 60, f"Workloads in {ns} to be gone")
