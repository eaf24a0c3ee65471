"""``kueue-cohorts init --stack NAME [--from TEMPLATE]``: write a new stack file from a template stack file.

The new ``stacks/Pulumi.<NAME>.yaml`` is the template's text (its comments kept) with the engine's per-stack secrets
state left out, so that the new stack gets its own:

- ``encryptionsalt`` (passphrase provider): Pulumi makes it from the passphrase in force on the stack's first run
  (pulumi/pkg v3.259.0 ``secrets/passphrase/manager.go`` NewPassphraseSecretsManager: 8 random bytes of salt and the
  word "pulumi" encrypted with the PBKDF2 key of passphrase and salt, ``v1:<salt>:<ciphertext>``) and writes it into
  the stack file. It cannot be made here without the team's passphrase, and a copied salt is what made a copied
  stack fail with "incorrect passphrase": the salt encodes the template's passphrase, not the new stack's.
- ``encryptedkey`` (a KMS provider's data key, wrapped for the template stack): made by the engine on first use
  too; ``secretsprovider`` (which KMS) is kept.

Refused, with nothing written (exit 2): a name the Pulumi CLI would refuse or that names a file outside stacks/, a
stack file that exists already (never overwritten), a template without a stack file, a template holding ``secure:``
values (encrypted with the template's key, unreadable by the new stack), and a result the settings check refuses
(components.checks.validation: every problem at its key). Exit 0 prints the file written and the next steps.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.settings import stackfile
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.secrets import is_secret
from kueue_cohorts.scaffold import add_verbose, guard

ROOT = PROJECT_ROOT
STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
"""A stack name as the Pulumi CLI takes it (pulumi/sdk v3.259.0 go/common/tokens: letters, digits, '-', '_', '.'),
without an organization prefix: the name is also the file name stacks/Pulumi.<name>.yaml."""
PER_STACK_KEYS = ("encryptionsalt", "encryptedkey")
"""The top-level keys of a stack file that belong to one stack's secrets state (left out of the copy)."""


class InitError(Exception):
    """The stack file cannot be written; the message says why and what to do."""


def new_stack_text(template_text: str, name: str, template: str) -> str:
    """Return the new stack file's text: ``template_text`` without its top-level ``encryptionsalt:`` and
    ``encryptedkey:`` lines, headed by one comment line naming the template. Pure."""
    kept = [line for line in template_text.splitlines()
            if not any(line.startswith(f"{key}:") for key in PER_STACK_KEYS)]
    header = (f"# {name}: created by `kueue-cohorts init --stack {name} --from {template}`; the engine writes this "
              "stack's own encryptionsalt on its first run (commit it then).")
    return "\n".join([header, *kept]) + "\n"


def _secret_keys(doc: dict[str, object]) -> list[str]:
    config = doc.get("config") or {}
    found: list[str] = []

    def walk(value: object, path: str) -> None:
        if is_secret(value):
            found.append(path)
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}")
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                walk(inner, f"{path}[{index}]")

    if isinstance(config, dict):
        for key, value in config.items():
            walk(value, str(key))
    return found


def init(root: Path, name: str, template: str) -> Path:
    """Write stack ``name``'s file under ``root``/stacks from stack ``template``'s file; return the path written.

    Raises:
        InitError: the name is invalid, the file exists, the template is missing, unreadable or holds secret values,
            or the settings check refuses the result (nothing is written in every case).
    """
    if not STACK_NAME.match(name) or name in (".", ".."):
        raise InitError(f"{name!r} is not a stack name: use letters, digits, '-', '_' and '.' (at most 100), e.g. "
                        "lab or gpu-staging")
    target = stackfile.stack_path(name, root)
    if target.exists():
        raise InitError(f"{target} exists already and is never overwritten. Fix: choose another --stack, or edit "
                        "that file")
    source = stackfile.stack_path(template, root)
    if not source.is_file():
        known = stackfile.stack_names(root)
        raise InitError(f"no template stack file {source}. Fix: --from one of {', '.join(known) or '(none)'}")
    try:
        doc = stackfile.read(source)
    except stackfile.StackFileError as err:
        raise InitError(f"the template cannot be read: {err}") from None
    secrets = _secret_keys(doc)
    if secrets:
        raise InitError(f"the template {source} holds secret values ({', '.join(secrets)}), encrypted with its own "
                        "key: a new stack cannot read them. Fix: start from a template without `secure:` values")
    text = new_stack_text(source.read_text(), name, template)
    partial = target.with_name(f".{target.name}.init")  # checked before it takes the stack file's name
    partial.write_text(text)
    try:
        load_stack_file(partial)
    except SettingsError as err:
        partial.unlink()
        raise InitError(f"the template {source} does not pass the settings check: {err}") from None
    except stackfile.StackFileError as err:
        partial.unlink()
        raise InitError(f"the result cannot be read: {err}") from None
    partial.rename(target)
    return target


NEXT_STEPS = """next steps:
  1. edit {path}: nodePools (your nodes' allocatable and labels), the quotas, cluster.mode/context
     (kueue-cohorts validate --stack {name} checks it after every edit, without the engine);
  2. a real cluster: cluster.mode kubeconfig and cluster.context; the stack is protected (team backend, own
     passphrase, policy pack). A lab cluster with a local backend: `kueue-cohorts:protected: false`
     (docs/operations.md, "Your own cluster");
  3. kueue-cohorts preview --stack {name}, then kueue-cohorts up --stack {name};
  4. commit {path} (with the encryptionsalt the first run wrote) and regenerate its pack config:
     kueue-cohorts validate --stack {name} --pack-config --write"""


DESCRIPTION = ("Write stacks/Pulumi.<stack>.yaml for a new stack from a template stack (its own encryption salt "
               "comes on its first run), then print the next steps.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--stack`` and ``--from`` to ``parser`` (``kueue-cohorts init``); ``run`` reads the Namespace it
    gives."""
    parser.add_argument("--stack", required=True, help="the new stack's name (stacks/Pulumi.<stack>.yaml)")
    parser.add_argument("--from", dest="template", default="staging",
                        help="the stack file to start from (default staging: a kubeconfig cluster with "
                             "nvidia.com/gpu nodes; dev: the sandbox and the guide's HAMi slice)")
    add_verbose(parser)


def run(args: argparse.Namespace) -> int:
    """Write the stack ``args.stack`` from ``args.template``; return 0 written, 2 refused (one message on
    stderr); an unexpected failure as ``kueue_cohorts.scaffold.guard`` says."""
    return guard("kueue-cohorts init", lambda: _write(args), verbose=args.verbose)


def _write(args: argparse.Namespace) -> int:
    try:
        path = init(ROOT, args.stack, args.template)
    except InitError as err:
        print(f"kueue-cohorts init: nothing written: {err}", file=sys.stderr)
        return 2
    print(f"kueue-cohorts init: wrote {path} from stack {args.template} (its own encryptionsalt comes on its first "
          "run)")
    print(NEXT_STEPS.format(path=path.relative_to(ROOT) if path.is_relative_to(ROOT) else path, name=args.stack))
    return 0
