"""Protected stacks: what a stack that targets a real cluster refuses, decided before any engine call. Pure.

A stack is protected when its cluster mode is ``kubeconfig`` or its stack file marks it ``kueue-cohorts:protected:
true`` (deploy.stackfile). A protected stack refuses:

- a local file backend: ``PULUMI_BACKEND_URL`` unset (the default ``file://~/.local/share/kueue-cohorts/state``)
  or a file URL (the scheme ``file`` in any case, as the CLI reads it: deploy.backend_url); the state of a real
  cluster belongs in the team backend;
- the dev passphrase: when the stack's secrets provider is ``passphrase``, ``PULUMI_CONFIG_PASSPHRASE`` or
  ``PULUMI_CONFIG_PASSPHRASE_FILE`` must be set, and not to the public dev passphrase of deploy.settings (a
  KMS provider, from the stack file's ``secretsprovider`` or ``KUEUE_COHORTS_SECRETS_PROVIDER`` for a new stack,
  needs no passphrase);
- ``--no-policy`` and a missing policy pack: the pack's mandatory policies are the gate of a real cluster.

Every problem is listed at once, each naming the variable or flag to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from kueue_cohorts.deploy.backend_url import is_file, redact
from kueue_cohorts.deploy.settings import DEV_PASSPHRASE
from kueue_cohorts.deploy.stackfile import StackTarget

PASSPHRASE_PROVIDER = "passphrase"


def uses_passphrase(target: StackTarget, environ: Mapping[str, str]) -> bool:
    """Return True if the stack's secrets are encrypted with a passphrase.

    The stack file decides for an existing stack (``secretsprovider:``; an ``encryptionsalt:`` alone means
    passphrase); a stack file with neither gets ``KUEUE_COHORTS_SECRETS_PROVIDER`` (default passphrase) on creation.
    """
    if target.secrets_provider:
        return target.secrets_provider == PASSPHRASE_PROVIDER
    if target.has_salt:
        return True
    return (environ.get("KUEUE_COHORTS_SECRETS_PROVIDER") or PASSPHRASE_PROVIDER) == PASSPHRASE_PROVIDER


def _passphrase_problem(environ: Mapping[str, str]) -> Optional[str]:
    fix = ("Fix: set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) to the team's passphrase, or use a "
           "KMS secrets provider (KUEUE_COHORTS_SECRETS_PROVIDER=awskms://alias/kueue-cohorts for a new stack)")
    phrase = environ.get("PULUMI_CONFIG_PASSPHRASE")
    phrase_file = environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if phrase:  # the engine prefers PULUMI_CONFIG_PASSPHRASE over the file
        return f"PULUMI_CONFIG_PASSPHRASE is the public dev passphrase. {fix}" if phrase == DEV_PASSPHRASE else None
    if not phrase_file:
        if phrase is not None:
            return f"PULUMI_CONFIG_PASSPHRASE is empty. {fix}"
        return f"PULUMI_CONFIG_PASSPHRASE is not set, so the public dev passphrase would encrypt its secrets. {fix}"
    try:
        content = Path(phrase_file).expanduser().read_text().strip()
    except OSError as err:
        return f"PULUMI_CONFIG_PASSPHRASE_FILE={phrase_file} cannot be read ({err.strerror or err}). {fix}"
    if content == DEV_PASSPHRASE:
        return f"PULUMI_CONFIG_PASSPHRASE_FILE={phrase_file} holds the public dev passphrase. {fix}"
    if not content:
        return f"PULUMI_CONFIG_PASSPHRASE_FILE={phrase_file} is empty. {fix}"
    return None


def problems(target: StackTarget, environ: Mapping[str, str], *, no_policy: bool,
             policy_pack: Optional[Path]) -> list[str]:
    """Return why ``target`` may not run with this environment and these flags (empty: it may).

    Args:
        target: the stack as its stack file says (deploy.stackfile.read).
        environ: the environment the engine would get (os.environ).
        no_policy: ``--no-policy`` was given. policy_pack: the pack directory (None: policy/ has no pack).
    Returns:
        One sentence per problem, each naming the variable or flag to set; always empty for an unprotected stack
        (the dev stack keeps its file backend and dev passphrase).
    """
    if not target.protected:
        return []
    found: list[str] = []
    url = environ.get("PULUMI_BACKEND_URL") or ""
    if not url:
        found.append("PULUMI_BACKEND_URL is not set, so its state would go to the local file backend "
                     "(~/.local/share/kueue-cohorts/state). Fix: set PULUMI_BACKEND_URL to the team backend "
                     "(s3://<bucket>/kueue-cohorts, gs://..., azblob://..., https://api.pulumi.com)")
    elif is_file(url) or "://" not in url:
        found.append(f"PULUMI_BACKEND_URL={redact(url)} is a local file backend. Fix: set PULUMI_BACKEND_URL to the "
                     "team backend (s3://<bucket>/kueue-cohorts, gs://..., azblob://..., https://api.pulumi.com)")
    if uses_passphrase(target, environ):
        problem = _passphrase_problem(environ)
        if problem:
            found.append(problem)
    if no_policy:
        found.append("--no-policy is refused: the policy pack's mandatory policies guard a real cluster. "
                     "Fix: drop --no-policy")
    elif policy_pack is None:
        found.append("the policy pack (policy/PulumiPolicy.yaml) is missing. Fix: restore policy/")
    return found


def message(target: StackTarget, found: list[str]) -> str:
    """Return the refusal: one header line naming the stack and why it is protected, then one line per problem."""
    why = "; ".join(target.protected_by)
    lines = [f"stack {target.name!r} is protected because {why}; refused before any engine call, "
             f"{len(found)} problem{'s' if len(found) != 1 else ''}:"]
    lines += [f"  - {p}." for p in found]
    return "\n".join(lines)
