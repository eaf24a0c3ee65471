"""Layer 5, stack: the assembly of a whole stack and its target. Only ``__main__.py`` imports this package.

- ``program``: the Kubernetes provider and ``build_stack`` (every component of the assembled stack, parented);
- ``target``: where the stack goes (sandbox, kubeconfig, render directory), resolved once at the top;
- ``preflight``: the live cluster checked before anything is registered (Kueue's API, the Trainer, namespaces and
  objects this stack did not create);
- ``sdk_runtime``: one fix to the pinned Pulumi Python SDK's end-of-program wait.
"""
from __future__ import annotations

from kueue_cohorts.components.stack.preflight import PreflightError
from kueue_cohorts.components.stack.program import build_stack, kubernetes_provider
from kueue_cohorts.components.stack.target import SandboxTarget, Target, resolve

__all__ = ["PreflightError", "SandboxTarget", "Target", "build_stack", "kubernetes_provider", "resolve"]
