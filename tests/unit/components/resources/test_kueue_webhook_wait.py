"""KueueInstallation holds its dependents back until Kueue's webhooks answer (issue 14 item 5).

The probe of an out-of-cluster manager is run against a real HTTPS server on loopback that speaks the admission
webhook protocol; the component's ordering is checked under Pulumi mocks with a probe that fails a few times."""

from __future__ import annotations

import http.server
import json
import ssl
import threading

import pulumi
import pytest

from kueue_cohorts.components.resources.kueue_install import (
    READY_CONFIGMAP,
    VALIDATE_FLAVOR_PATH,
    ChartReference,
    KueueInstallation,
    KueueInstallationArgs,
    KueueWebhooksNotAnswering,
    OutOfClusterManager,
    WebhookReadiness,
    probe_out_of_cluster_manager,
    wait_for_webhooks,
)
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings import KueueSettings
from kueue_cohorts.sandbox import certs
from tests.helpers import RecordingMocks


class FakeClock:
    """A monotonic clock that advances only when `sleep` is called."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _failing(times: int, calls: list):
    def probe() -> None:
        calls.append(1)
        if len(calls) <= times:
            raise ConnectionRefusedError(f"connection refused (attempt {len(calls)})")
    return probe


@pytest.mark.parametrize("failures", [0, 1, 7])
def test_wait_returns_once_the_probe_succeeds(failures):
    calls, clock = [], FakeClock()
    waited, failed = wait_for_webhooks(WebhookReadiness(_failing(failures, calls), "probe", timeout_s=60,
                                                        interval_s=2), clock=clock, sleep=clock.sleep)
    assert len(calls) == failures + 1
    assert (waited, failed) == (2 * failures, failures)


def test_wait_gives_up_after_the_timeout_naming_the_probe_and_the_last_error():
    calls, clock = [], FakeClock()
    readiness = WebhookReadiness(_failing(10**6, calls), "an AdmissionReview to x", timeout_s=30, interval_s=1)
    with pytest.raises(KueueWebhooksNotAnswering) as err:
        wait_for_webhooks(readiness, clock=clock, sleep=clock.sleep)
    text = str(err.value)
    assert "did not answer within 30 s (an AdmissionReview to x)" in text
    assert f"connection refused (attempt {len(calls)})" in text
    assert len(calls) == 31


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return certs.ensure(tmp_path_factory.mktemp("pki"))


def _serve(pki, answer):
    """An HTTPS server on 127.0.0.1 with the sandbox's webhook pair; `answer(review)` returns the JSON reply."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, review))
            body = json.dumps(answer(review)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pki.webhook_dir / "tls.crt"), str(pki.webhook_dir / "tls.key"))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def _allowed(review):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True}}


def test_the_manager_probe_asks_the_validating_resourceflavor_webhook(pki):
    server, seen = _serve(pki, _allowed)
    try:
        manager = OutOfClusterManager(f"https://127.0.0.1:{server.server_address[1]}", pki.ca_crt.read_bytes())
        probe_out_of_cluster_manager(manager)()
    finally:
        server.shutdown()
    path, review = seen[0]
    assert path == VALIDATE_FLAVOR_PATH
    request = review["request"]
    assert request["operation"] == "CREATE" and request["dryRun"] is True
    assert request["kind"] == {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "ResourceFlavor"}
    assert request["object"]["kind"] == "ResourceFlavor"


@pytest.mark.parametrize("answer", [
    lambda review: {"response": {"uid": review["request"]["uid"], "allowed": False}},
    lambda review: {"response": {"uid": "someone-else", "allowed": True}},
    lambda review: {},
])
def test_the_manager_probe_refuses_any_answer_but_allowed(pki, answer):
    server, _ = _serve(pki, answer)
    try:
        manager = OutOfClusterManager(f"https://127.0.0.1:{server.server_address[1]}", pki.ca_crt.read_bytes())
        with pytest.raises(ValueError, match="the webhook answered"):
            probe_out_of_cluster_manager(manager)()
    finally:
        server.shutdown()


def test_the_manager_probe_fails_while_nothing_listens_and_on_an_untrusted_certificate(pki, tmp_path):
    server, _ = _serve(pki, _allowed)
    port = server.server_address[1]
    other_ca = certs.ensure(tmp_path / "other").ca_crt.read_bytes()
    try:
        with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
            probe_out_of_cluster_manager(OutOfClusterManager(f"https://127.0.0.1:{port}", other_ca))()
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(OSError):
        probe_out_of_cluster_manager(OutOfClusterManager(f"https://127.0.0.1:{port}", pki.ca_crt.read_bytes()))()


class OrderMocks(RecordingMocks):
    """Mocks that also note, in one shared list, each registration and each probe attempt in the order they happen."""

    def __init__(self, events: list) -> None:
        super().__init__()
        self.events = events

    def new_resource(self, args):
        self.events.append(("register", args.name))
        return super().new_resource(args)


def _run(build, mocks, preview=False):
    pulumi.runtime.set_mocks(mocks, project="kueue-cohorts", stack="test", preview=preview)

    @pulumi.runtime.test
    def program():
        build()

    program()


@pytest.mark.parametrize("failures", [0, 3])
def test_dependents_register_only_after_the_chart_and_the_webhooks_answered(failures):
    events: list = []

    def probe():
        events.append(("probe", len([e for e in events if e[0] == "probe"])))
        if len([e for e in events if e[0] == "probe"]) <= failures:
            raise ConnectionRefusedError("not yet")

    def build():
        installation = KueueInstallation("kueue", KueueInstallationArgs(
            KueueSettings(install=True), ChartReference("oci://example.invalid/kueue", "0.19.2"),
            webhook_readiness=WebhookReadiness(probe, "fake", timeout_s=60, interval_s=0)))
        ManifestResource("resource-flavor", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                             "metadata": {"name": "f"}}, pulumi.ResourceOptions(
            depends_on=[installation]))

    mocks = OrderMocks(events)
    _run(build, mocks)
    order = [e[1] if e[0] == "register" else "probe" for e in events]
    probes = [i for i, e in enumerate(order) if e == "probe"]
    assert len(probes) == failures + 1
    assert order.index("kueue-chart") < probes[0]
    assert probes[-1] < order.index("kueue-webhooks-ready") < order.index("resource-flavor")
    gate = next(r for r in mocks.registered if r.name == "kueue-webhooks-ready")
    assert gate.typ == "kubernetes:core/v1:ConfigMap"
    assert gate.inputs["metadata"]["name"] == READY_CONFIGMAP
    assert gate.inputs["metadata"]["namespace"] == "kueue-system"
    assert gate.inputs["data"] == {"webhooks": "answered"}


def test_a_preview_does_not_wait_and_render_mode_has_no_gate():
    events: list = []

    def never():
        events.append(("probe", 0))
        raise ConnectionRefusedError("no cluster")

    def build(readiness):
        def inner():
            KueueInstallation("kueue", KueueInstallationArgs(
                KueueSettings(install=True), ChartReference("oci://example.invalid/kueue", "0.19.2"),
                webhook_readiness=readiness))
        return inner

    preview = OrderMocks(events)
    _run(build(WebhookReadiness(never, "fake", timeout_s=0, interval_s=0)), preview, preview=True)
    assert ("probe", 0) not in events
    assert "kueue-webhooks-ready" in [r.name for r in preview.registered]
    render = OrderMocks([])
    _run(build(None), render)
    assert [r.name for r in render.registered] == ["kueue", "kueue-ns", "kueue-chart"]


def test_the_sandbox_manager_is_probed_by_default():
    manager = OutOfClusterManager("https://127.0.0.1:9443", b"PEM")
    args = KueueInstallationArgs(KueueSettings(install=True), ChartReference("c"), manager)
    assert args.readiness().what == f"an AdmissionReview to https://127.0.0.1:9443{VALIDATE_FLAVOR_PATH}"
    assert KueueInstallationArgs(KueueSettings(install=True), ChartReference("c")).readiness() is None
