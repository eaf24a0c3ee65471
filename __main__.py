"""kueue-cohorts: the Pulumi program. Read the stack config once, validate it, build the stack, export its outputs.

Run through `make up` / `make preview` (python -m kueue_cohorts.deploy: the real pulumi CLI with this file as an inline
program)
or with `pulumi up` where a Python language host is installed. Nothing is registered if the config is invalid.
"""
from pathlib import Path

import pulumi

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.model.kueue import namespace_owner
from kueue_cohorts.components.settings import PROJECT, config_keys
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.components.settings.secrets import locate
from kueue_cohorts.components.settings.stackfile import stack_path
from kueue_cohorts.components.stack import sdk_runtime
from kueue_cohorts.components.stack.ownership import take_back_stack
from kueue_cohorts.components.stack.preflight import PreflightError
from kueue_cohorts.components.stack.program import build_stack, kubernetes_provider, worker_providers
from kueue_cohorts.components.stack.target import SandboxTarget, resolve
from kueue_cohorts.sandbox.endpoints import kueue_webhook_endpoint, worker_kubeconfigs
from kueue_cohorts.sandbox.paths import kubeconfig_path

# the SDK's end-of-program wait, linear in the number of outputs (components/stack/sdk_runtime.py)
sdk_runtime.install()
config = pulumi.Config(PROJECT)
raw = {key: value for key in config_keys() if (value := config.get_object(key)) is not None}
# A secret (pulumi config set --secret, also nested with --path) arrives decrypted inside its top-level key, which
# the engine marks secret; the stack file shows where it is nested. No setting takes a secret
# (components.settings.secrets).
project_dir = Path(globals().get("PROJECT_DIR") or pulumi.get_root_directory() or Path(__file__).resolve().parent)
secret = locate([key for key in raw if pulumi.runtime.is_config_secret(f"{PROJECT}:{key}")],
                stack_path(pulumi.get_stack(), project_dir))
owner = namespace_owner(pulumi.get_project(), pulumi.get_stack())  # the mark on the Namespaces this stack creates
result = validate(raw, secret, owner)  # every problem at once, on the objects registered below; nothing before this
for warning in result.warnings:
    pulumi.log.warn(str(warning))
if result.problems or result.settings is None:
    raise pulumi.RunError(str(SettingsError(result.problems)))  # the message alone, no Python traceback
try:
    # cluster preflight: Kueue's API, namespaces this stack did not create
    sandbox = SandboxTarget(kubeconfig_path(), kueue_webhook_endpoint, worker_kubeconfigs)
    target = resolve(result.settings, owner, sandbox, result.rendered)  # the preflight reads the judged render
except PreflightError as err:
    raise pulumi.RunError(str(err)) from None
for line in target.warnings:
    pulumi.log.warn(line)
root = Path(__file__).resolve().parent
provider = kubernetes_provider(result.settings.cluster, root, target.kubeconfig)
workers = worker_providers(result.settings, root, {name: w.kubeconfig for name, w in target.workers.items()})
secrets = {name: pulumi.Output.secret(w.kubeconfig_text) for name, w in target.workers.items() if w.kubeconfig_text}
stack = assemble(result.settings, owner, result.rendered)  # the very objects judged above, and the rest of the stack
# what the stack declares on objects it created, taken back from other field managers (a kubectl edit) before the
# engine applies: server-side apply would merge their list elements and map keys in (components/stack/ownership.py)
ownership = take_back_stack(stack, result.settings, target, write=not pulumi.runtime.is_dry_run())
for line in ownership.taken:
    pulumi.log.info(("up takes back " if pulumi.runtime.is_dry_run() else "took back ") + line)
for line in ownership.skipped:
    pulumi.log.warn(f"field ownership: {line}")
for key, value in build_stack(result.settings, provider, target.chart, target.manager, namespace_owner=owner,
                              webhook_readiness=target.webhook_readiness, assembled=stack,
                              worker_providers=workers, worker_kubeconfigs=secrets).items():
    if not key.startswith("_"):
        pulumi.export(key, value)
