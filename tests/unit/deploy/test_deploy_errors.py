"""deploy.errors on the shapes of real engine output (pulumi 3.259.0, as captured from failed deploy runs):
the cause first, wrappers and trailers dropped, Python tracebacks and gRPC plumbing filtered."""
from __future__ import annotations

from kueue_cohorts.deploy import errors

PROVIDER_FAILURE = """\
Updating (norender):
 +  pulumi:pulumi:Stack kueue-cohorts-norender creating (0s)
 +  kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor resource-flavor creating (0s) error: failed to write YAML file: \
"/x/1-manifest/rf.yaml": open /x/1-manifest/rf.yaml: not a directory
 +  kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor resource-flavor **creating failed** error: failed to write YAML \
file: "/x/1-manifest/rf.yaml": open /x/1-manifest/rf.yaml: not a directory
 +  pulumi:pulumi:Stack kueue-cohorts-norender creating (0s) error: update failed
Diagnostics:
  pulumi:pulumi:Stack (kueue-cohorts-norender):
    error: update failed

  kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor (resource-flavor):
    error: failed to write YAML file: "/x/1-manifest/rf.yaml": open /x/1-manifest/rf.yaml: not a directory

Resources:
    + 3 created
    2 errored
error: failed to run policy: context canceled
""".splitlines()

PROGRAM_EXCEPTION = """\
Diagnostics:
  pulumi:pulumi:Stack (kueue-cohorts-dev):
    error: python inline source runtime error: the context "prod" does not exist
    Traceback (most recent call last):
      File "/venv/pulumi/automation/_server.py", line 94, in Run
        loop.run_until_complete(run_in_stack(self.program))
        ~~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/repo/__main__.py", line 65, in <module>
        require_kueue_api(kubeconfig, cluster.context, version)

    During handling of the above exception, another exception occurred:

    Traceback (most recent call last):
      File "/repo/components/stack/preflight.py", line 30, in require_kueue_api
        api = config.new_client_from_config(config_file=None, context=context)
    kubernetes.config.config_exception.ConfigException: Invalid kube-config file. Expected key contexts
    grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:
        status = StatusCode.UNAVAILABLE
        details = "resource monitor shut down"
    >
    error: an unhandled error occurred: python inline source runtime error: the context "prod" does not exist
error: preview failed
""".splitlines()


def test_the_provider_cause_is_the_only_line():
    assert errors.error_lines(PROVIDER_FAILURE) == [
        'error: failed to write YAML file: "/x/1-manifest/rf.yaml": open /x/1-manifest/rf.yaml: not a directory']


def test_program_exceptions_lose_their_traceback_wrappers_and_grpc_lines():
    assert errors.error_lines(PROGRAM_EXCEPTION) == ['error: the context "prod" does not exist']
    kept = errors.without_tracebacks(PROGRAM_EXCEPTION)
    assert not any("Traceback" in line or "File \"" in line or "grpc" in line or "StatusCode" in line
                   for line in kept)
    # the exception line that ends a traceback is the error: it stays
    assert any("ConfigException: Invalid kube-config file" in line for line in kept)


def test_multi_line_messages_keep_their_continuation():
    lines = ["  error: invalid stack config: 2 problems", "    - a = 1: rule. Fix: x.", "    - b = 2: rule. Fix: y.",
             "  other: resource", "error: update failed"]
    assert errors.error_lines(lines) == ["error: invalid stack config: 2 problems", "  - a = 1: rule. Fix: x.",
                                         "  - b = 2: rule. Fix: y."]


def test_command_error_framing_is_removed():
    class Fake(Exception):
        def __str__(self) -> str:
            return "\n code: 255\n stdout: Previewing update (dev):\nline\n stderr: error: boom\nmore\n"
    assert errors.command_output(Fake()) == ["", "Previewing update (dev):", "line", "error: boom", "more"]
    assert errors.error_lines(errors.command_output(Fake())) == ["error: boom"]


def test_nothing_to_report_is_empty():
    assert errors.error_lines(["Resources:", "    + 1 to create", "error: preview failed"]) == []
