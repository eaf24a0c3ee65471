"""JUDGEABLE_PATCHES (stack policy): every patch can be judged as the object it produces.

A `<Kind>Patch` is judged as the object it produces (`vocabulary/patches.py`, pulumi-kubernetes 4.25
`sdk/python/pulumi_kubernetes/apiextensions/CustomResourcePatch.py`); one whose kind, apiVersion or name cannot be
told (a value unknown at preview, a kind that does not match its type token) leaves that object unknown, so the
policies fail closed on it here.
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import KubeObject, violation
from .vocabulary.patches import PATCH_SUFFIX, resolve_patches
from .vocabulary.plain import plain
from .vocabulary.values import Violation


def check_patches(objects: Iterable[KubeObject], policy: str) -> list[Violation]:
    """JUDGEABLE_PATCHES over the whole stack: a patch whose resulting object cannot be determined fails closed.

    Args:
        objects: every Kubernetes object of the stack.
        policy: the policy name for the Violations.
    Returns:
        One Violation per unjudgeable patch, naming the field that makes it so (`kind`, `apiVersion`,
        `metadata.name`, `metadata.namespace`) and its value.
    """
    found = []
    for obj, where, value, reason in resolve_patches(objects).unjudgeable:
        found.append(violation(
            obj, policy, where, plain(value),
            f"the pack judges a patch as the object it produces, but this patch's {where} {reason}, so that object "
            f"cannot be determined and the policies fail closed",
            f"give the patch a literal {where} that matches its type token ({obj.kind[: -len(PATCH_SUFFIX)]} of "
            f"{obj.api_version}), or create the object itself instead of patching it"))
    return found


JUDGEABLE_PATCHES: Declaration = Declaration(
    name="judgeable-patches",
    description="Every patch can be judged as the object it produces (kind, apiVersion and name known).",
    promise=Promise.WELL_FORMED, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_patches(objects, JUDGEABLE_PATCHES.name))
