"""How many engine passes ``deploy up`` runs: one when every resource the program registers came from the assembler,
else a preview with the policy pack first (issue 40 item 7).

Why the count can follow a fact. The settings check (components/checks/validation.py) judges, with the pack's rule
book, exactly the objects the one assembler builds (``components.model.assembly.assemble``), and deploy runs it on
the stack file before any engine call (exit 2, nothing run). When the program registers those objects and nothing
else, a preview with the pack before the update judges nothing the check has not judged, and the update still runs
the pack (each resource policy before its resource is created, the stack policies at the end): one pass. When the
program registers anything else (a resource a user added to ``__main__.py`` by hand, an edited component), only the
pack can judge it, and its stack policies would see it only after the update created it: the preview comes first
(two passes), and deploy says which resources and why.

How deploy knows, before any engine run: ``dry_run`` runs the program in this process under the Pulumi SDK's own
mocks, as a preview (``pulumi.runtime.set_mocks(..., preview=True)``: ``is_dry_run()`` is true, so the program's
field take-back writes nothing, components/stack/ownership.py), with the stack's config as the engine hands it to a
program (``set_all_config``: each ``<namespace>:<key>`` of the stack file, a string as written, any other value as
JSON). A recording monitor (a subclass of the SDK's ``MockMonitor``) keeps every ``RegisterResource`` request: type
token, name, parent URN, custom or component, remote, provider reference and inputs (pulumi 3.259.0,
``pulumi/runtime/mocks.py``: ``MockMonitor.RegisterResource`` builds the URN from the request's parent with
``make_urn`` and hands the deserialised inputs to ``Mocks.new_resource``; the outputs returned here are the inputs).
The run is in a copy of the current ``contextvars`` context, so the SDK's settings, config and root resource
(context variables in pulumi 3.259.0, ``pulumi/runtime/settings.py`` and ``config.py``) are the engine's again
afterwards; the engine's inline program server sets its own anyway (``pulumi/automation/_server.py``
``reset_options``, ``set_all_config``).

``judge`` then sorts the registrations: judged are the root Stack; a local component (it creates nothing; its
children are judged one by one); the stack's kubernetes providers (``k8s``, ``k8s-worker-<name>`` of each MultiKueue
worker); each Kubernetes object whose cluster, type token, namespace, name and inputs are those of one object of the
assembled stack (``AssembledStack.registered`` and ``workers``, as tests/unit/components/model/test_registered_is_
rendered.py compares them); and the two registrations ``KueueInstallation`` adds beside the assembler (Kueue's Helm
chart, whose values the settings check judges, and its webhook-readiness ConfigMap). Anything else is unjudged.

Fail-closed: a dry run that raises (the program's own refusal, a cluster the preflight cannot read, a ``secure:``
config value it cannot decrypt, anything) decides two passes, with the reason. Blind spot, shared with the preview
it replaces: a program that registers other resources in an update than in a preview (``is_dry_run()``) is judged on
its preview's registrations both ways.
"""
from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi.runtime
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from kueue_cohorts.components.model.assembly import AssembledStack
from kueue_cohorts.components.settings.stackfile import read as read_stack_file
from kueue_cohorts.policy.rules.vocabulary.multikueue import MANAGER, WORKER_PROVIDER_PREFIX

STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_TYPE = "pulumi:providers:kubernetes"
#: The stack's kubernetes provider (components/stack/program.py ``kubernetes_provider``).
PROVIDER_NAME = "k8s"
INSTALLATION_TYPE = "kueue-cohorts:kueue:KueueInstallation"
#: What ``KueueInstallation`` (components/resources/kueue_install.py) registers beside the assembler's objects:
#: (type token, suffix of the installation's name). Kueue's chart (its values are judged by the settings check,
#: components/checks/chart_values.py) and the webhook-readiness ConfigMap (a synchronisation marker).
INSTALLATION_OWN: tuple[tuple[str, str], ...] = (("kubernetes:helm.sh/v4:Chart", "-chart"),
                                                 ("kubernetes:core/v1:ConfigMap", "-webhooks-ready"))
#: How the SDK marks a secret value on the wire (pulumi 3.259.0 ``pulumi/runtime/rpc.py`` ``_special_secret_sig``);
#: the mock monitor hands a secret input to the mocks so marked.
SECRET_SIG = rpc._special_secret_sig


Program = Callable[[], Awaitable[None] | None]
"""A Pulumi program function (the Automation API's ``PulumiFn``): deploy.engine.inline_program of a __main__.py."""


class DryRunError(Exception):
    """The dry run could not run the program as the engine would (a ``secure:`` config value it cannot decrypt)."""


@dataclass(frozen=True, slots=True)
class Registration:
    """One ``RegisterResource`` request of the program, as the monitor received it.

    type_token: ``package:module:Type``; name: the Pulumi name; urn: the mock monitor's URN; parent: the parent's URN
    ("" for the root Stack); custom: a resource managed by a provider (False: a component); remote: a component a
    provider constructs (its children are never registered by this program); provider: the provider reference
    (``<provider urn>::<id>``, "" for none); inputs: the inputs, deserialised (wire names).
    """

    type_token: str
    name: str
    urn: str
    parent: str
    custom: bool
    remote: bool
    provider: str
    inputs: Mapping[str, Any]

    def describe(self) -> str:
        """``<type token> <name>``, with the namespace/name of a Kubernetes object when it has one."""
        metadata = self.inputs.get("metadata") if isinstance(self.inputs, Mapping) else None
        if isinstance(metadata, Mapping) and isinstance(metadata.get("name"), str):
            where = f"{metadata['namespace']}/" if isinstance(metadata.get("namespace"), str) else ""
            return f"{self.type_token} {self.name} ({where}{metadata['name']})"
        return f"{self.type_token} {self.name}"


class RecordingMonitor(MockMonitor):
    """The SDK's mock resource monitor (pulumi 3.259.0 ``pulumi/runtime/mocks.py``) that also keeps every
    ``RegisterResource`` request in ``registered`` (a list of Registration), in the order the program made them."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registered: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - the gRPC method's name
        """Register as the SDK's MockMonitor does, and record the request with the URN it was given."""
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]  # untyped SDK module
        inputs = {} if request.type == STACK_TYPE else rpc.deserialize_properties(request.object)
        self.registered.append(Registration(request.type, request.name, response.urn, request.parent,
                                            bool(request.custom), bool(request.remote), request.provider,
                                            inputs))
        return response


class EchoMocks(pulumi.runtime.Mocks):
    """Mocks whose every resource's outputs are its inputs (id ``<name>-id``) and whose every call returns nothing."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """The resource's id and outputs: its inputs."""
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        """A provider function's result: empty."""
        return {}, None


def engine_config(path: Path) -> dict[str, str]:
    """The config of stack file ``path`` as the engine hands it to a program: ``<namespace>:<key>`` -> the value, a
    string as written, any other value as JSON (``pulumi.Config.get_object`` parses it back).

    Raises:
        DryRunError: a ``secure:`` value (the dry run has no passphrase to decrypt it; the settings check refuses
            one under ``kueue-cohorts:`` already).
        components.settings.stackfile.StackFileError: the file cannot be read as a stack file.
    """
    config = read_stack_file(path).get("config") or {}
    out: dict[str, str] = {}
    secret = [key for key, value in config.items() if _has_secure(value)]
    if secret:
        raise DryRunError(f"the stack file holds secret values ({', '.join(sorted(secret))}), which the dry run cannot "
                          "decrypt")
    for key, value in config.items():
        out[str(key)] = value if isinstance(value, str) else json.dumps(value)
    return out


def _has_secure(value: Any) -> bool:
    if isinstance(value, Mapping):
        return ("secure" in value and len(value) == 1) or any(_has_secure(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_secure(v) for v in value)
    return False


def dry_run(program: Program, project: str, stack: str, config: Mapping[str, str]) -> list[Registration]:
    """Run ``program`` (deploy.engine.inline_program of the stack's __main__.py) under the SDK's mocks as a preview
    of stack ``stack`` of ``project`` with ``config`` (``engine_config``); return every resource it registered, in
    order. Nothing reaches an engine or a provider; the program's own reads (its cluster preflight) run as in a
    preview. The SDK's settings are left as they were (module doc).

    Raises:
        Exception: whatever the program raises (``pulumi.RunError`` of its settings check or preflight, ...).
    """
    def run() -> list[Registration]:
        monitor = RecordingMonitor(EchoMocks())
        quiet = logging.getLogger("kueue_cohorts.deploy.passes.dry_run")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=True, logger=quiet,
                                 monitor=monitor)
        pulumi.runtime.set_all_config(dict(config), [])
        SETTINGS.rpc_manager.clear()  # as pulumi.runtime.test does (pulumi/runtime/mocks.py, 3.259.0)
        SETTINGS.outputs.clear()
        _sync_await(run_pulumi_func(program))
        return list(monitor.registered)

    return contextvars.copy_context().run(run)


Ref = tuple[str, str, str, str]
"""(cluster, type token, namespace, name) of a Kubernetes object: the cluster is ``MANAGER`` or a worker's name."""


def _normal(value: Any) -> Any:
    """``value`` as plain JSON (sorted keys), for comparing a registration's inputs with a rendered manifest."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _ref(cluster: str, type_token: str, manifest: Mapping[str, Any]) -> Ref:
    metadata = manifest.get("metadata") or {}
    return cluster, type_token, str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _without_kubeconfig(inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs of a MultiKueue kubeconfig Secret without the one field added to its rendered object
    (``stringData.kubeconfig``, a Pulumi secret, components/resources/multikueue.py); any other inputs unchanged."""
    data = inputs.get("stringData")
    if isinstance(data, Mapping) and data.get(SECRET_SIG) \
            and isinstance(data.get("value"), Mapping) and set(data["value"]) == {"kubeconfig"}:
        return {k: v for k, v in inputs.items() if k != "stringData"}
    return inputs


def _name_of(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _type_of(urn: str) -> str:
    return urn.split("::")[2].rsplit("$", 1)[-1] if urn.count("::") >= 3 else ""


def judge(registered: Sequence[Registration], assembled: AssembledStack) -> list[Registration]:
    """The registrations of ``registered`` (a ``dry_run``) that did not come from the assembler, in order (module
    doc: what counts as judged). Pure; each assembled object matches one registration at most."""
    workers = [w.name for w in assembled.rendered.workers]
    providers = {PROVIDER_NAME: MANAGER, **{f"{WORKER_PROVIDER_PREFIX}{w}": w for w in workers}}
    pool: dict[Ref, list[Any]] = {}
    for cluster, items in [(MANAGER, assembled.registered()), *assembled.workers().items()]:
        for rendered in items:
            manifest = _normal(rendered.manifest)
            pool.setdefault(_ref(cluster, rendered.type_token, manifest), []).append(manifest)
    ours = {r.urn: providers[r.name] for r in registered
            if r.custom and r.type_token == PROVIDER_TYPE and r.name in providers}
    out = []
    for item in registered:
        if item.type_token == STACK_TYPE and not item.parent:
            continue
        if not item.custom and not item.remote:
            continue  # a component of this program: creates nothing itself
        if item.urn in ours:
            continue
        if _type_of(item.parent) == INSTALLATION_TYPE and any(
                item.type_token == token and item.name == _name_of(item.parent) + suffix
                for token, suffix in INSTALLATION_OWN):
            continue
        provider_urn = item.provider.rsplit("::", 1)[0] if item.provider else ""
        on = ours.get(provider_urn)
        if item.custom and on is not None and item.type_token.startswith("kubernetes:"):
            inputs = _normal(item.inputs)
            if item.type_token == "kubernetes:core/v1:Secret":
                inputs = _without_kubeconfig(inputs)
            candidates = pool.get(_ref(on, item.type_token, inputs), [])
            if inputs in candidates:
                candidates.remove(inputs)
                continue
        out.append(item)
    return out


@dataclass(frozen=True, slots=True)
class Decision:
    """How many engine passes ``up`` runs and why.

    passes: 1 (the update alone, the pack running in it) or 2 (a preview with the pack, then the update). reason:
    one line, why. unjudged: the registrations no settings check judged (``judge``). seconds: the dry run's wall
    time (0 when none ran).
    """

    passes: int
    reason: str
    unjudged: tuple[Registration, ...] = ()
    seconds: float = 0.0

    def lines(self, shown: int = 10) -> list[str]:
        """The lines deploy prints: the decision and its reason, then up to ``shown`` unjudged resources (and how
        many more)."""
        head = [f"up in {'one pass' if self.passes == 1 else 'two passes'}: {self.reason}"]
        rest = [f"  not judged by the settings check: {r.describe()}" for r in self.unjudged[:shown]]
        if len(self.unjudged) > shown:
            rest.append(f"  ... and {len(self.unjudged) - shown} more")
        return head + rest


def decide(program: Program, project: str, stack: str, stack_file: Path, assembled: AssembledStack,
           clock: Callable[[], float] = time.monotonic) -> Decision:
    """The pass count of ``up`` for ``program`` on stack ``stack`` (its stack file ``stack_file``), whose settings
    check judged ``assembled``: one pass when the dry run registers only what the assembler built (``judge``), two
    when it registers anything else or when it fails (fail-closed: the reason names the error). Never raises for a
    failing program."""
    start = clock()
    try:
        registered = dry_run(program, project, stack, engine_config(stack_file))
    except Exception as err:  # noqa: BLE001 - fail-closed: any failure of the dry run means the preview comes first
        first = (str(err).strip().splitlines() or [""])[0][:200]
        return Decision(2, f"the dry run of the program failed ({type(err).__name__}: {first}), so the preview with "
                           "the policy pack comes first", seconds=clock() - start)
    seconds = clock() - start
    unjudged = judge(registered, assembled)
    if unjudged:
        return Decision(2, f"the program registers {len(unjudged)} resource(s) the assembler did not build, which only "
                           "the policy pack judges (its stack policies after the update created them): preview with "
                           f"the pack first (dry run {seconds:.1f} s)", tuple(unjudged), seconds)
    return Decision(1, f"the program registers only the {len(registered)} resources of the assembler, which the "
                       f"settings check judged; the pack runs in the update (dry run {seconds:.1f} s)",
                    seconds=seconds)

