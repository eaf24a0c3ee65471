"""Promise 2 on a live cluster: the installed Kubeflow Trainer must be one the pinned Kueue can admit TrainJobs of.
Trainer v2.1's TrainJob CRD has no spec.runtimePatches, which Kueue >= 0.17 writes to resume an admitted TrainJob,
so TrainJobs are admitted and never start or never resume (kueue#11931, #14722). The decision (`trainer_problem`) is
judged on the pinned Trainer's own CRD and on it with the field taken out; the cluster read
(`require_admittable_trainer`) against a fake API server answering as the apiserver does."""
from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts import toolchain
from kueue_cohorts.components.stack.preflight import (
    TRAINER_FINDING,
    TRAINJOB_CRD,
    PreflightError,
    require_admittable_trainer,
    trainer_problem,
)

CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{TRAINJOB_CRD}"


def _pinned_crd() -> dict[str, Any]:
    """The TrainJob CRD of the Trainer this project pins (toolchain/versions.toml [crds] trainer, v2.2.1)."""
    [crd] = [d for d in toolchain.crd_documents("trainer") if d["metadata"]["name"] == TRAINJOB_CRD]
    return copy.deepcopy(crd)


def _as_v2_1(crd: dict[str, Any]) -> dict[str, Any]:
    """The same CRD without spec.runtimePatches: the TrainJob API shape of Trainer v2.1."""
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("runtimePatches", None)
    return crd


def test_the_pinned_trainer_is_admittable():
    assert trainer_problem(_pinned_crd(), "0.19.2", "2.2.1") is None


def test_no_trainer_is_nothing_to_judge():
    assert trainer_problem(None, "0.19.2", "2.2.1") is None


def test_a_trainer_v2_1_crd_is_the_named_finding():
    problem = trainer_problem(_as_v2_1(_pinned_crd()), "0.19.2", "2.2.1")
    assert problem is not None and problem.startswith(f"{TRAINER_FINDING}: the installed Kubeflow Trainer serves "
                                                      "TrainJob v1alpha1 without spec.runtimePatches")
    assert "kueue#11931" in problem and problem.endswith(
        "Upgrade Kubeflow Trainer to v2.2.1 (the version this project pins, toolchain/versions.toml), CRDs included, "
        "before this stack runs training")


@settings(max_examples=30, deadline=None)
@given(served=st.lists(st.tuples(st.sampled_from(["v1alpha1", "v1beta1", "v1"]), st.booleans(), st.booleans()),
                       min_size=1, max_size=3, unique_by=lambda v: v[0]),
       label=st.sampled_from([None, "v2.1.0", "v2.2.1"]))
def test_only_a_served_version_with_runtime_patches_counts(served, label):
    """Whatever the versions and labels: admittable exactly when some served version has spec.runtimePatches."""
    base = _pinned_crd()
    template = base["spec"]["versions"][0]
    versions = []
    for name, is_served, has_field in served:
        version = copy.deepcopy(template)
        version.update(name=name, served=is_served)
        if not has_field:
            version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("runtimePatches")
        versions.append(version)
    base["spec"]["versions"] = versions
    if label:
        base["metadata"].setdefault("labels", {})["app.kubernetes.io/version"] = label
    problem = trainer_problem(base, "0.19.2", "2.2.1")
    assert (problem is None) == any(s and f for _, s, f in served)
    if problem is not None and label:
        assert f"(labelled version {label})" in problem


class _FakeApiServer(BaseHTTPRequestHandler):
    """Answers GET of the TrainJob CRD as the apiserver does: the CRD (200), NotFound or Forbidden (Status JSON)."""

    answer: tuple[int, Optional[dict[str, Any]]] = (404, None)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        status, body = self.answer if self.path.split("?")[0] == CRD_PATH else (404, None)
        if body is None:
            reason = "NotFound" if status == 404 else "Forbidden"
            body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": status,
                    "message": f"customresourcedefinitions {TRAINJOB_CRD!r} {reason.lower()}"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_cluster(tmp_path: Path) -> Iterator[tuple[Path, type[_FakeApiServer]]]:
    handler = type("Handler", (_FakeApiServer,), {})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    try:
        yield kubeconfig, handler
    finally:
        server.shutdown()
        server.server_close()


def test_the_preflight_refuses_a_cluster_with_trainer_v2_1(fake_cluster):
    kubeconfig, handler = fake_cluster
    handler.answer = (200, _as_v2_1(_pinned_crd()))
    with pytest.raises(PreflightError) as caught:
        require_admittable_trainer(kubeconfig, None, "0.19.2", "2.2.1", timeout_seconds=5)
    assert str(caught.value).startswith(f"{TRAINER_FINDING}: ")


@pytest.mark.parametrize("answer", [(200, "pinned"), (404, None)], ids=["trainer-v2.2.1", "no-trainer"])
def test_the_preflight_passes_the_pinned_trainer_or_none(fake_cluster, answer):
    kubeconfig, handler = fake_cluster
    handler.answer = (answer[0], _pinned_crd() if answer[1] == "pinned" else None)
    require_admittable_trainer(kubeconfig, None, "0.19.2", "2.2.1", timeout_seconds=5)


def test_a_crd_that_cannot_be_read_fails_closed_naming_the_permission(fake_cluster):
    kubeconfig, handler = fake_cluster
    handler.answer = (403, None)
    with pytest.raises(PreflightError) as caught:
        require_admittable_trainer(kubeconfig, None, "0.19.2", "2.2.1", timeout_seconds=5)
    message = str(caught.value)
    assert message.startswith(f"Cannot read the CustomResourceDefinition {TRAINJOB_CRD} of the cluster (kubeconfig "
                              f"{kubeconfig}, context current): ")
    assert message.endswith("give its identity get on customresourcedefinitions, or use cluster mode render to work "
                            "offline.")
