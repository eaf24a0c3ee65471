"""After an interrupted run: reconcile the engine's pending operations before the next ``up``.

A run killed mid-way (SIGKILL, a CI timeout) leaves ``pending_operations`` in the stack's checkpoint: resources the
engine had asked the provider to create, update or delete without recording the answer. The engine's next ``up``
only warns about them and drops them ("Attempting to deploy or update resources with N pending operations"), and
with provider 4.25.0 a create of an object that exists silently takes it over (server-side apply).

``reconcile`` does what the engine's own warning asks a person to do, as the engine's own commands:

- every pending **create** of a Kubernetes object is handed to ``pulumi refresh --import-pending-creates URN ID``
  with the provider ID the object would have (``<namespace>/<name>``, or ``<name>`` cluster-scoped); the refresh
  reads it: an object the killed run did create is recorded in the state (and so diffed, not re-created), one it
  did not create is dropped from the state (and so created by the ``up``);
- every other pending create (provider resources: nothing in the cluster) is dropped (``--clear-pending-creates``);
- pending updates and deletes are settled by the same refresh (it reads every resource of the stack).

Then it says what it did, per resource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from pulumi import automation as auto

KUBERNETES_TYPE_PREFIX = "kubernetes:"


@dataclass(frozen=True)
class PendingOperation:
    """One pending operation of a checkpoint: ``type`` (creating, updating, deleting, reading, importing), ``urn``,
    ``resource_type`` (e.g. ``kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue``) and ``provider_id`` (the
    Kubernetes object's ID for a create of a namespaced or cluster-scoped object, else None)."""

    type: str
    urn: str
    resource_type: str
    provider_id: Optional[str]


@dataclass
class Reconciliation:
    """What ``reconcile`` did. pending: the operations found. adopted: URNs of pending creates the refresh found in
    the cluster (now in the state). dropped: URNs of pending creates that did not exist (the ``up`` creates them).
    settled: URNs of other pending operations (updated, deleted) that the refresh read back."""

    pending: list[PendingOperation]
    adopted: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human-readable lines, one per resource, for the deploy log."""
        out = [f"the last run was interrupted with {len(self.pending)} pending operation(s); reconciled with "
               f"`pulumi refresh` before this up:"]
        out += [f"  adopted (the interrupted run had created it): {urn}" for urn in self.adopted]
        out += [f"  absent, dropped from the state (this up creates it): {urn}" for urn in self.dropped]
        out += [f"  read back after an interrupted update or delete: {urn}" for urn in self.settled]
        return out


def provider_id(inputs: dict[str, Any]) -> Optional[str]:
    """Return the pulumi-kubernetes provider ID of an object from its inputs: ``<namespace>/<name>`` when
    ``metadata.namespace`` is set, else ``<name>``; None without ``metadata.name`` (e.g. a component)."""
    metadata = inputs.get("metadata") if isinstance(inputs, dict) else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        return None
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if isinstance(namespace, str) and namespace else metadata["name"]


def pending_operations(deployment: Mapping[str, Any]) -> list[PendingOperation]:
    """Return the pending operations of an exported deployment (``pulumi stack export``'s ``deployment``)."""
    found = []
    for op in deployment.get("pending_operations") or []:
        resource = op.get("resource") or {}
        rtype = str(resource.get("type", ""))
        pid = provider_id(resource.get("inputs") or {}) if rtype.startswith(KUBERNETES_TYPE_PREFIX) else None
        found.append(PendingOperation(str(op.get("type", "")), str(resource.get("urn", "")), rtype, pid))
    return found


def refresh_args(stack_name: str, config_file: str, pending: list[PendingOperation]) -> list[str]:
    """Return the ``pulumi refresh`` arguments that settle ``pending`` (see the module doc)."""
    args = ["refresh", "--stack", stack_name, "--config-file", config_file, "--yes", "--skip-preview",
            "--color", "never"]
    for op in pending:
        if op.type == "creating" and op.provider_id:
            args += ["--import-pending-creates", op.urn, "--import-pending-creates", op.provider_id]
    if any(op.type == "creating" for op in pending):
        args.append("--clear-pending-creates")
    return args


def reconcile(stack: auto.Stack, config_file: str, on_output: Callable[[str], None],
              on_change: Callable[[], None] = lambda: None) -> Optional[Reconciliation]:
    """Settle the pending operations of ``stack`` (see the module doc); None when there are none.

    Runs ``pulumi stack export`` and, if needed, ``pulumi refresh`` with the workspace's CLI and environment (the
    Automation API's ``refresh`` has no ``--import-pending-creates``); ``on_change()`` is called right before that
    refresh changes the state. Raises auto.CommandError if the refresh fails.
    """
    pending = pending_operations(stack.export_stack().deployment or {})
    if not pending:
        return None
    on_change()
    workspace = stack.workspace
    workspace.pulumi_command.run(refresh_args(stack.name, config_file, pending), workspace.work_dir,
                                 dict(workspace.env_vars), on_output=on_output)
    after = stack.export_stack().deployment or {}
    in_state = {r.get("urn") for r in after.get("resources") or []}
    result = Reconciliation(pending)
    for op in pending:
        if op.type == "creating":
            (result.adopted if op.urn in in_state else result.dropped).append(op.urn)
        else:
            result.settled.append(op.urn)
    return result
