"""Preflight: before any resource is registered, check the target cluster.

`require_kueue_api`: the cluster serves Kueue's API. `require_admittable_trainer`: the installed Kubeflow Trainer is one
the pinned Kueue can admit and resume TrainJobs of (`trainer_problem` decides from the TrainJob CRD).
`check_namespaces`: the stack adopts no namespace it did not
create (pulumi-kubernetes 4.25.0 creates by server-side apply, which takes an existing object over silently, and a
later destroy, or removing the namespace from the config, would delete it with everything inside), labels only
namespaces that exist, and never stops declaring a namespace it created in a way that would delete it. The decision
is the pure `namespace_problems`; `live_namespaces` is the one cluster read (a list of Namespaces). Both run in the
program (`components.stack.target.resolve`), so every `pulumi up` / `preview` of the stack is guarded; render mode has
no cluster and no preflight.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

from kubernetes import client, config  # the official client: discovery of API groups, the Namespace list
from kubernetes.client.exceptions import ApiException

from kueue_cohorts.components.model.kueue import OWNER_ANNOTATION
from kueue_cohorts.components.model.kueue_chart import ChartObject, cluster_objects
from kueue_cohorts.components.model.render import RenderedStack, render
from kueue_cohorts.components.settings import (
    PROJECT,
    ClusterMode,
    MultiKueueWorker,
    NamespacePolicy,
    PreviewIdentityCreate,
    Settings,
    config_key,
)
from kueue_cohorts.components.settings.errors import Problem, problems_message
from kueue_cohorts.components.settings.quoting import shell_word
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
MINIMUM_KUEUE = "0.16"
T = TypeVar("T")


class PreflightError(RuntimeError):
    """The cluster cannot take this stack as configured; the message says what to install or change."""


def _read_cluster(kubeconfig: Optional[Path], context: Optional[str], read: Callable[[client.ApiClient], T],
                  failed: str, advice: str) -> T:
    """Return `read(api)` for an API client of `kubeconfig` / `context` (None: the client's default file, the file's
    current context). Raises PreflightError "<failed> (kubeconfig ..., context ...): <error>. <advice>" on any
    failure (unreachable cluster, bad kubeconfig, no permission): then the cluster cannot be checked."""
    try:
        api = config.new_client_from_config(
            config_file=str(kubeconfig) if kubeconfig else None, context=context)
        return read(api)
    except Exception as err:  # noqa: BLE001 - any failure here means we cannot check the cluster
        raise PreflightError(
            f"{failed} (kubeconfig {kubeconfig or 'default'}, context {context or 'current'}): {err}. {advice}"
        ) from None


def require_kueue_api(kubeconfig: Optional[Path], context: Optional[str], pinned_kueue: str,
                      timeout_seconds: float = 15.0) -> None:
    """Check that the cluster serves kueue.x-k8s.io/v1beta2 (Kueue >= 0.16, where it is the storage version).

    Args:
        kubeconfig: kubeconfig file (None: the client's default). context: kubeconfig context (None: current).
        pinned_kueue: the Kueue version this project pins (toolchain/versions.toml), named in the message.
        timeout_seconds: API discovery timeout.
    Raises:
        PreflightError: the cluster is unreachable, or does not serve kueue.x-k8s.io/v1beta2.
    """
    groups = _read_cluster(
        kubeconfig, context, lambda api: client.ApisApi(api).get_api_versions(_request_timeout=timeout_seconds).groups,
        "Cannot read the API groups of the cluster",
        "Check the kubeconfig, or use cluster mode render to work offline.")
    served = sorted(v.version for g in groups if g.name == KUEUE_GROUP for v in g.versions)
    if KUEUE_VERSION not in served:
        have = f"it serves {KUEUE_GROUP} {', '.join(served)}" if served else "it has no Kueue API"
        raise PreflightError(
            f"The cluster does not serve {KUEUE_GROUP}/{KUEUE_VERSION} ({have}). Install Kueue {MINIMUM_KUEUE} "
            "or newer "
            f"({KUEUE_VERSION} is the storage version since {MINIMUM_KUEUE}; this project pins {pinned_kueue}), or set "
            "kueue-cohorts:kueue.install: true to install it with this stack."
        )


# --- the installed Kubeflow Trainer ----------------------------------------------------------------------------------

TRAINJOB_CRD = "trainjobs.trainer.kubeflow.org"
TRAINER_FINDING = "trainer-not-admittable"
"""The name of the preflight's finding when the installed Trainer cannot be admitted by the pinned Kueue."""


def trainer_problem(crd: Optional[Mapping[str, Any]], pinned_kueue: str, pinned_trainer: str) -> Optional[str]:
    """Whether the pinned Kueue can admit and resume TrainJobs of the Trainer whose TrainJob CRD is `crd`. Pure.

    Kueue >= 0.17 (0.19.2 here) resumes an admitted TrainJob by writing the TrainJob's `spec.runtimePatches` while it
    is still suspended (pkg/controller/jobs/trainjob/trainjob_controller.go, v0.19.2), a field the TrainJob CRD has
    only from Trainer v2.2 (trainer v2.2.1 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml). On a Trainer
    v2.1 CRD the apiserver prunes it, so the Workload is admitted, holds its quota, and the TrainJob never starts or
    never resumes after a preemption (kueue#11931, kueue#14722; Kueue refuses such a CRD at setup from kueue#14886).

    Args:
        crd: the CustomResourceDefinition `trainjobs.trainer.kubeflow.org` as the API returns it (JSON), or None
            when the cluster has none (no Trainer: nothing to judge here).
        pinned_kueue, pinned_trainer: the versions this project pins, named in the message.
    Returns:
        None when some served version's schema has `spec.runtimePatches`; else the finding, one sentence with its
        fix, starting with `TRAINER_FINDING`.
    """
    if crd is None:
        return None
    served = []
    for version in crd.get("spec", {}).get("versions") or []:
        if not version.get("served"):
            continue
        served.append(str(version.get("name")))
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        spec = (schema.get("properties") or {}).get("spec") or {}
        if "runtimePatches" in (spec.get("properties") or {}):
            return None
    labels = (crd.get("metadata") or {}).get("labels") or {}
    version_label = labels.get("app.kubernetes.io/version")
    shown = f" (labelled version {version_label})" if version_label else ""
    versions = ", ".join(served) or "no version"
    return (f"{TRAINER_FINDING}: the installed Kubeflow Trainer{shown} serves TrainJob {versions}"
            f" without spec.runtimePatches, so it is older than v2.2 (e.g. v2.1): Kueue {pinned_kueue} resumes an "
            "admitted TrainJob by writing spec.runtimePatches, which this CRD drops, so TrainJobs would hold their "
            "quota and never start or never resume after a preemption (kueue#11931, kueue#14722). Upgrade Kubeflow "
            f"Trainer to v{pinned_trainer.lstrip('v')} (the version this project pins, toolchain/versions.toml), "
            "CRDs included, before this stack runs training")


def installed_trainjob_crd(kubeconfig: Optional[Path], context: Optional[str],
                           timeout_seconds: float = 15.0) -> Optional[dict[str, Any]]:
    """The cluster's `trainjobs.trainer.kubeflow.org` CustomResourceDefinition as JSON, or None when there is none.

    Raises:
        PreflightError: the CRD cannot be read (unreachable cluster, no permission to get CRDs).
    """

    def read(api: client.ApiClient) -> Optional[dict[str, Any]]:
        try:
            response: Any = client.ApiextensionsV1Api(api).read_custom_resource_definition(
                TRAINJOB_CRD, _preload_content=False, _request_timeout=timeout_seconds)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        found: dict[str, Any] = json.loads(response.data)
        return found

    return _read_cluster(
        kubeconfig, context, read, f"Cannot read the CustomResourceDefinition {TRAINJOB_CRD} of the cluster",
        "The stack checks that the installed Kubeflow Trainer is one Kueue can admit; give its identity get on "
        "customresourcedefinitions, or use cluster mode render to work offline.")


def require_admittable_trainer(kubeconfig: Optional[Path], context: Optional[str], pinned_kueue: str,
                               pinned_trainer: str, timeout_seconds: float = 15.0) -> None:
    """Refuse a cluster whose Kubeflow Trainer the pinned Kueue cannot admit TrainJobs of (`trainer_problem`).

    Raises:
        PreflightError: the finding `trainer-not-admittable`, or the CRD cannot be read.
    """
    problem = trainer_problem(installed_trainjob_crd(kubeconfig, context, timeout_seconds), pinned_kueue,
                              pinned_trainer)
    if problem is not None:
        raise PreflightError(problem)


# --- a CRDsOnly MultiKueue manager runs no Trainer ------------------------------------------------------------------

TRAINER_WEBHOOK_SUFFIX = ".trainer.kubeflow.org"
"""Kubeflow Trainer v2.2.1's webhook configurations are `defaulter.trainer.kubeflow.org` (mutating) and
`validator.trainer.kubeflow.org` (validating), failurePolicy Fail (manifests/base/webhook/manifests.yaml)."""
CRDS_ONLY_FINDING = "manager-trainer-not-crds-only"
"""The name of the preflight's finding when a CRDsOnly manager still has the Trainer's webhooks."""


def crds_only_problem(webhooks: Sequence[str], key: str) -> Optional[str]:
    """Whether a manager cluster declared `multiKueue.managerTrainer: CRDsOnly` (config key `key`) really serves the
    Trainer's CRDs only. Pure.

    Its webhook configurations are the sign of an installed Trainer: with them, either its controller runs and, on the
    pinned Trainer v2.2.1 (pkg/controller/trainjob_controller.go `Reconcile`, no `spec.managedBy` check; v2.3.0 added
    one), also runs every TrainJob Kueue dispatches to a worker, or the controller is gone and its failurePolicy Fail
    webhooks refuse every TrainJob.

    Args:
        webhooks: the names of the cluster's Validating- and MutatingWebhookConfigurations.
        key: the config key path of the setting, named in the finding.
    Returns:
        None when no name ends in `.trainer.kubeflow.org`; else the finding, one sentence with its fix, starting with
        `CRDS_ONLY_FINDING`.
    """
    found = sorted(name for name in webhooks if name.endswith(TRAINER_WEBHOOK_SUFFIX))
    if not found:
        return None
    return (f"{CRDS_ONLY_FINDING}: {key} = 'CRDsOnly', but the manager cluster has the Kubeflow Trainer's webhook "
            f"configurations ({', '.join(found)}): its Trainer is installed, so its controller would also run every "
            "TrainJob Kueue dispatches to a worker (Trainer v2.2.1 ignores spec.managedBy), or, without the "
            "controller, those webhooks refuse every TrainJob. Fix: on the manager, uninstall the Trainer's "
            "controller and delete these webhook configurations, keeping its CRDs (docs/multikueue.md), or set "
            f"{key}: Controller and do not dispatch the training queue")


def require_crds_only_trainer(kubeconfig: Optional[Path], context: Optional[str], key: str,
                              timeout_seconds: float = 15.0) -> None:
    """Refuse a CRDsOnly MultiKueue manager that still has the Trainer's webhooks (`crds_only_problem`).

    Raises:
        PreflightError: the finding `manager-trainer-not-crds-only`, or the webhook configurations cannot be read.
    """

    def read(api: client.ApiClient) -> list[str]:
        admission = client.AdmissionregistrationV1Api(api)
        names: list[str] = []
        for listed in (admission.list_validating_webhook_configuration, admission.list_mutating_webhook_configuration):
            response: Any = listed(_preload_content=False, _request_timeout=timeout_seconds)
            names += [str(item["metadata"]["name"]) for item in json.loads(response.data).get("items") or []]
        return names

    names = _read_cluster(kubeconfig, context, read, "Cannot read the webhook configurations of the manager cluster",
                          f"The stack checks that {key} CRDsOnly holds; give its identity list on "
                          "validatingwebhookconfigurations and mutatingwebhookconfigurations.")
    problem = crds_only_problem(names, key)
    if problem is not None:
        raise PreflightError(problem)


# --- namespaces this stack did not create -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeclaredNamespace:
    """A tenant namespace of the stack config.

    name: the namespace. key: its config key path (`kueue-cohorts:inferenceTraining.training.namespaces[0]`,
    `kueue-cohorts:sharedPool.tenants[3].name` when the tenant's namespace is its name). policy: its own
    (`namespacePolicies.<name>`, else its layout's namespacePolicy). policy_key: the key that sets it for this
    namespace alone (`kueue-cohorts:sharedPool.namespacePolicies.<name>`), which a fix names.
    """

    name: str
    key: str
    policy: NamespacePolicy
    policy_key: str
    create_fix: Optional[str] = None
    """The fix of a Create problem when it is not "Label or External" (the preview identity's own namespace)."""


@dataclass(frozen=True)
class LiveNamespace:
    """A Namespace as the cluster has it: `owner` is its `kueue-cohorts/owner` annotation (None: absent),
    `managed_by_us` whether it carries `app.kubernetes.io/managed-by: kueue-cohorts` (a namespace an earlier version
    of a kueue-cohorts stack created, before the ownership mark)."""

    name: str
    owner: Optional[str] = None
    managed_by_us: bool = False


class NamespacePreflightError(PreflightError):
    """The stack would adopt, or delete, a namespace it must not. `problems`: one Problem per namespace (key path,
    namespace, rule, fix); str() is one message, a header and one line each, like SettingsError."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        super().__init__(problems_message("namespace preflight", self.problems, "; nothing was registered"))


def declared_namespaces(settings: Settings, rendered: Optional[RenderedStack] = None) -> list[DeclaredNamespace]:
    """Every tenant namespace of `settings` (both layouts), with the config key that declares it: the key that wrote
    the `metadata.namespace` of its LocalQueue (every tenant namespace has one) in the `rendered` stack (the settings
    check's render, which the program carries here; default: `render(settings)`); then the
    preview identity's own namespace when the stack creates it (`previewIdentity.create`
    ServiceAccountAndNamespace); with `kueue.install` on a real cluster (cluster mode kubeconfig), Kueue's own
    namespace (`kueue_namespace`). In config order, each namespace once. The sandbox (cluster mode sandbox) creates
    Kueue's namespace and objects itself, for the stack it was brought up for: not judged there."""
    policies = {"inferenceTraining": settings.inference_training, "sharedPool": settings.shared_pool}
    out: dict[str, DeclaredNamespace] = {}
    for item in (rendered or render(settings)).objects():
        layout = policies.get(str(item.source[0])) if item.source else None
        if item.kind != "LocalQueue" or layout is None or item.namespace is None or item.namespace in out:
            continue
        key = item.fields.get("metadata.namespace", item.source)
        out[item.namespace] = DeclaredNamespace(  # the fix names this namespace's own key: one adopted, not all
            item.namespace, config_key(f"{PROJECT}:{key[0]}", *key[1:]), layout.policy_of(item.namespace),
            config_key(f"{PROJECT}:{key[0]}", "namespacePolicies", item.namespace))
    kueue = settings.kueue
    if kueue.install and settings.cluster.mode == ClusterMode.KUBECONFIG and kueue.namespace not in out:
        out[kueue.namespace] = kueue_namespace(settings)
    identity = settings.preview_identity
    if (identity is not None and identity.namespace and identity.namespace not in out
            and identity.effective_create() == PreviewIdentityCreate.SERVICE_ACCOUNT_AND_NAMESPACE):
        create_key = config_key(f"{PROJECT}:previewIdentity", "create")
        out[identity.namespace] = DeclaredNamespace(
            identity.namespace, config_key(f"{PROJECT}:previewIdentity", "namespace"), NamespacePolicy.CREATE,
            create_key,
            f"set {create_key} to ServiceAccount (the stack creates only the ServiceAccount, in the existing "
            f"namespace) or Nothing, or give previewIdentity a namespace of its own")
    return list(out.values())


KUEUE_INSTALL_FIX = ("set kueue.install to false to use the Kueue that is installed (the stack then only checks that "
                     "it serves kueue.x-k8s.io/v1beta2), or set kueue.namespace to a namespace of its own")


def kueue_namespace(settings: Settings) -> DeclaredNamespace:
    """Kueue's namespace as the stack declares it with `kueue.install` (KueueInstallation creates it, and the chart
    puts its Deployment, Service, Secret, ConfigMap, RBAC there): namespacePolicy Create at key `kueue.namespace`,
    its fix `KUEUE_INSTALL_FIX` (existing, unmarked: Kueue, or something else, is there already, and the chart's
    server-side apply would take its objects over and destroy would delete them)."""
    return DeclaredNamespace(settings.kueue.namespace, config_key(f"{PROJECT}:kueue", "namespace"),
                             NamespacePolicy.CREATE, config_key(f"{PROJECT}:kueue", "install"), KUEUE_INSTALL_FIX)


def kueue_api_problems(settings: Settings, live: Mapping[str, LiveNamespace], serves_kueue: bool,
                       owner: str, found: Sequence[ChartObject] = ()) -> list[Problem]:
    """Kueue's chart objects that exist without this stack's mark (pure). With `kueue.install` on a real cluster, the
    chart writes cluster-scoped objects outside Kueue's namespace (components/model/kueue_chart.py): when the cluster
    already serves kueue.x-k8s.io (Kueue's CRDs are installed, `serves_kueue`) or already has any of the chart's
    ClusterRoles, ClusterRoleBindings, webhook configurations or APIServices (`found`, from `chart_objects_present`),
    and Kueue's namespace is absent or not marked by this stack, installing would take those objects over
    (server-side apply) and destroy would delete them, with every workload's queue. One Problem at `kueue.install`
    naming what exists (at most five objects by name, then how many more); empty otherwise (a namespace this stack
    marked: this stack installed them)."""
    if not (settings.kueue.install and settings.cluster.mode == ClusterMode.KUBECONFIG and (serves_kueue or found)):
        return []
    have = live.get(settings.kueue.namespace)
    if have is not None and have.owner == owner:
        return []
    where = ("in no namespace this stack created" if have is None or have.owner is None
             else f"by stack {have.owner}")
    what = []
    if serves_kueue:
        what.append(f"the cluster already serves {KUEUE_GROUP} (Kueue's CRDs are installed {where})")
    if found:
        shown = ", ".join(o.describe() for o in sorted(found)[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        what.append(f"the cluster already has {len(found)} of the cluster-wide objects Kueue's chart writes "
                    f"({shown}{more}), installed {where}")
    return [Problem(
        config_key(f"{PROJECT}:kueue", "install"), True,
        f"{'; '.join(what)}; installing the chart would take them over silently and destroy would delete them with "
        "every queue",
        KUEUE_INSTALL_FIX)]


#: (API group, version, plural) of each kind of `components.model.kueue_chart.cluster_objects`, to list them.
CHART_KINDS: dict[str, tuple[str, str, str]] = {
    "ClusterRole": ("rbac.authorization.k8s.io", "v1", "clusterroles"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"),
    "APIService": ("apiregistration.k8s.io", "v1", "apiservices"),
}


def chart_objects_present(kubeconfig: Optional[Path], context: Optional[str], wanted: Sequence[ChartObject],
                          timeout_seconds: float = 15.0) -> list[ChartObject]:
    """Which of `wanted` (`cluster_objects(kueue.values)`) the cluster has: one list call per kind (CHART_KINDS),
    official kubernetes client. The preview identity reads these kinds with `kueue.install`
    (components/model/preview_rbac.py KUEUE_CHART_OBJECTS).

    Raises:
        PreflightError: a kind cannot be listed (unreachable cluster, no permission), naming the kind.
    """
    kinds = sorted({o.kind for o in wanted})
    if not kinds:
        return []

    def read(api: client.ApiClient) -> set[ChartObject]:
        custom = client.CustomObjectsApi(api)
        have = set()
        for kind in kinds:
            group, version, plural = CHART_KINDS[kind]
            answer = custom.list_cluster_custom_object(group, version, plural, _request_timeout=timeout_seconds)
            items = answer.get("items") or [] if isinstance(answer, dict) else []
            have |= {ChartObject(kind, str((item.get("metadata") or {}).get("name"))) for item in items}
        return have

    have = _read_cluster(kubeconfig, context, read, f"Cannot list the {', '.join(kinds)} objects of the cluster",
                         "With kueue.install the stack checks that Kueue's chart takes over no object it did not "
                         "create; give its identity list on those kinds.")
    return sorted(o for o in wanted if o in have)


def _policy_fix(ns: DeclaredNamespace) -> str:
    return (f"set {ns.policy_key} to Label (the stack only adds its selector label; destroy, or removing the "
            "namespace from the config, removes that label and keeps the namespace) or External (the stack leaves "
            "the namespace alone and you manage the label)")


def namespace_problems(declared: Sequence[DeclaredNamespace], live: Mapping[str, LiveNamespace],
                       owner: str) -> list[Problem]:
    """Judge the declared namespaces against the live ones. Pure.

    Args:
        declared: `declared_namespaces(settings)`. live: the cluster's Namespaces by name (absent = not there).
        owner: this stack's mark, `components.model.kueue.namespace_owner(project, stack)`.
    Returns:
        One Problem per namespace (in `declared` order), empty when the stack may go ahead:
        - Create, the namespace exists and does not carry this stack's mark: it would be taken over (and deleted with
          everything in it on destroy); fix Label or External;
        - Label, the namespace does not exist: the provider's server-side apply would create it, unmarked, and its
          delete only relinquishes the label, so nothing would ever delete it; fix: create it, or Create;
        - External, the namespace does not exist: the LocalQueue in it could not be created (half an `up`);
        - External, the namespace carries this stack's mark: the stack created it, and no longer declaring it makes
          the engine delete it; fix: go through Label (which hands the namespace over in place) first.
    """
    problems = []
    for ns in declared:
        have = live.get(ns.name)
        if ns.policy == NamespacePolicy.CREATE and have is not None and have.owner != owner:
            if have.owner:
                who = f"stack {have.owner} created it (annotation {OWNER_ANNOTATION})"
            else:
                who = f"it has no {OWNER_ANNOTATION} annotation, so this stack did not create it"
            legacy = ""
            if have.owner is None and have.managed_by_us:
                legacy = (f"; if an earlier version of this stack did create it (it carries {MANAGED_BY_LABEL}="
                          f"{MANAGED_BY}), mark it instead: kubectl annotate namespace {shell_word(ns.name)} "
                          f"{shell_word(f'{OWNER_ANNOTATION}={owner}')}")
            problems.append(Problem(
                ns.key, ns.name,
                f"the namespace already exists and {who}; with namespacePolicy Create the kubernetes provider would "
                "take it over silently, and destroy, or removing it from the config, would then delete it with "
                "everything in it",
                (ns.create_fix or _policy_fix(ns)) + legacy))
        elif ns.policy == NamespacePolicy.LABEL and have is None:
            problems.append(Problem(
                ns.key, ns.name,
                "namespacePolicy Label labels an existing namespace, and this one does not exist (the provider's "
                "server-side apply would create it, and nothing would ever delete it)",
                f"create the namespace first, or set {ns.policy_key} to Create"))
        elif ns.policy == NamespacePolicy.EXTERNAL and have is None:
            problems.append(Problem(
                ns.key, ns.name,
                "namespacePolicy External leaves the namespace to you, and it does not exist, so its LocalQueue "
                "could not be created",
                f"create the namespace with the layout's selector label first, or set {ns.policy_key} to Create"))
        elif ns.policy == NamespacePolicy.EXTERNAL and have is not None and have.owner == owner:
            problems.append(Problem(
                ns.key, ns.name,
                f"this stack created the namespace ({OWNER_ANNOTATION}={owner}); with namespacePolicy External the "
                "stack stops declaring it, and up would delete it with everything in it",
                f"set {ns.policy_key} to Label and run up first (the stack keeps the namespace, drops its mark and "
                "keeps only its selector label), then External (that up removes the label: put it on yourself "
                "first); or, if this stack no longer holds the namespace, remove the mark: kubectl annotate "
                f"namespace {ns.name} {OWNER_ANNOTATION}-"))
    return problems


def undeclared_owned(declared: Sequence[DeclaredNamespace], live: Mapping[str, LiveNamespace],
                     owner: str) -> list[str]:
    """The live namespaces that carry this stack's mark but that no layout declares any more, sorted: a tenant
    removed from a Create layout, whose Namespace the engine deletes (with everything in it) in this `up`. Pure."""
    names = {ns.name for ns in declared}
    return sorted(name for name, have in live.items() if have.owner == owner and name not in names)


def serves_kueue(kubeconfig: Optional[Path], context: Optional[str], timeout_seconds: float = 15.0) -> bool:
    """Whether the cluster serves the API group kueue.x-k8s.io (one discovery call; discovery is open to every
    authenticated user, `system:discovery`). Raises PreflightError when the API groups cannot be read."""
    groups = _read_cluster(
        kubeconfig, context, lambda api: client.ApisApi(api).get_api_versions(_request_timeout=timeout_seconds).groups,
        "Cannot read the API groups of the cluster",
        "Check the kubeconfig, or use cluster mode render to work offline.")
    return any(g.name == KUEUE_GROUP for g in groups)


def live_namespaces(kubeconfig: Optional[Path], context: Optional[str],
                    timeout_seconds: float = 15.0) -> dict[str, LiveNamespace]:
    """The cluster's Namespaces by name (one list call, official kubernetes client).

    Raises:
        PreflightError: the Namespaces cannot be listed (unreachable cluster, no permission to list namespaces).
    """
    items = _read_cluster(
        kubeconfig, context, lambda api: client.CoreV1Api(api).list_namespace(_request_timeout=timeout_seconds).items,
        "Cannot list the Namespaces of the cluster",
        "The stack checks that it adopts no namespace it did not create; give its identity list on namespaces, or use "
        "cluster mode render to work offline.")
    out = {}
    for item in items:
        meta = item.metadata
        if meta is None or meta.name is None:
            continue
        out[meta.name] = LiveNamespace(meta.name, (meta.annotations or {}).get(OWNER_ANNOTATION),
                                       (meta.labels or {}).get(MANAGED_BY_LABEL) == MANAGED_BY)
    return out


def check_namespaces(settings: Settings, owner: str, kubeconfig: Optional[Path], context: Optional[str],
                     rendered: Optional[RenderedStack] = None) -> list[str]:
    """The namespace preflight of `settings` (`rendered`: their render, see `declared_namespaces`) on the cluster of
    `kubeconfig` / `context`.

    Returns:
        Warnings (one line each): namespaces this stack created that no layout declares any more (the engine deletes
        them in this `up`, with everything in them).
    Raises:
        NamespacePreflightError: one message listing every namespace problem (`namespace_problems`).
        PreflightError: the Namespaces cannot be listed.
    """
    declared = declared_namespaces(settings, rendered)
    live = live_namespaces(kubeconfig, context)
    problems = namespace_problems(declared, live, owner)
    if settings.kueue.install and settings.cluster.mode == ClusterMode.KUBECONFIG and not problems:
        have = live.get(settings.kueue.namespace)
        found = [] if have is not None and have.owner == owner else chart_objects_present(
            kubeconfig, context, cluster_objects(settings.kueue.values))
        problems = kueue_api_problems(settings, live, serves_kueue(kubeconfig, context), owner, found)
    if problems:
        raise NamespacePreflightError(problems)
    return [f"namespace {name} carries this stack's mark ({OWNER_ANNOTATION}={owner}) and no layout declares it any "
            "more: if this stack still holds it, this up deletes it with everything in it. To keep it, declare it "
            "again with namespacePolicy Label for one up (the stack hands it over in place), then remove it"
            for name in undeclared_owned(declared, live, owner)]


@dataclass(frozen=True)
class LiveAccount:
    """A ServiceAccount as the cluster has it: `owner` its `kueue-cohorts/owner` annotation (None: absent),
    `managed_by_us` whether it carries `app.kubernetes.io/managed-by: kueue-cohorts` (an account an earlier version of
    a kueue-cohorts stack created, before the mark)."""

    namespace: str
    name: str
    owner: Optional[str] = None
    managed_by_us: bool = False


def account_problems(index: int, worker: MultiKueueWorker, live: Optional[LiveAccount], owner: str) -> list[Problem]:
    """Judge the worker ServiceAccount the stack would create (`multiKueue.workers[index].serviceAccount`) against the
    live one on the worker. Pure.

    Returns:
        One Problem when the account exists and is not this stack's: it carries another stack's mark, or neither a
        mark nor the managed-by label (someone else's account: the provider's server-side apply would take it over,
        bind the worker role to whatever already runs as it, and destroy would delete it). Empty when it is absent,
        carries this stack's mark, or only the managed-by label (an earlier version of the stack).
    """
    if live is None or live.owner == owner or (live.owner is None and live.managed_by_us):
        return []
    who = f"stack {live.owner} created it" if live.owner else \
        f"it has neither the {OWNER_ANNOTATION} annotation nor {MANAGED_BY_LABEL}={MANAGED_BY}"
    return [Problem(
        config_key("kueue-cohorts:multiKueue", "workers", index, "serviceAccount"), worker.service_account,
        f"the ServiceAccount {live.namespace}/{live.name} already exists on worker {worker.name} and {who}: the stack "
        "would take it over, grant the worker role to whatever runs as it, and destroy would delete it",
        "name an account of its own in multiKueue.workers[].serviceAccount (and make the worker kubeconfig's token "
        f"for it), or, if this stack did create it, mark it: kubectl annotate serviceaccount -n {live.namespace} "
        f"{live.name} {OWNER_ANNOTATION}={owner}")]


def live_account(kubeconfig: Optional[Path], context: Optional[str], namespace: str, name: str,
                 timeout_seconds: float = 15.0) -> Optional[LiveAccount]:
    """The ServiceAccount `namespace/name` of the cluster, or None when absent (one read, official client).

    Raises:
        PreflightError: it cannot be read (unreachable cluster, no permission to read ServiceAccounts).
    """
    def read(api: client.ApiClient) -> Optional[LiveAccount]:
        try:
            account = client.CoreV1Api(api).read_namespaced_service_account(name, namespace,
                                                                            _request_timeout=timeout_seconds)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        meta = account.metadata
        annotations = (meta.annotations if meta is not None else None) or {}
        labels = (meta.labels if meta is not None else None) or {}
        return LiveAccount(namespace, name, annotations.get(OWNER_ANNOTATION),
                           labels.get(MANAGED_BY_LABEL) == MANAGED_BY)

    return _read_cluster(kubeconfig, context, read, f"Cannot read the ServiceAccount {namespace}/{name}",
                         "The stack checks that it takes over no account it did not create; give its identity get on "
                         "serviceaccounts in Kueue's namespace.")


def check_worker_account(settings: Settings, index: int, worker: MultiKueueWorker, owner: str,
                         kubeconfig: Optional[Path], context: Optional[str]) -> None:
    """The preflight of the worker ServiceAccount `worker` (`multiKueue.workers[index]`) on its cluster.

    Raises:
        NamespacePreflightError: the account exists and is not this stack's (`account_problems`).
        PreflightError: it cannot be read.
    """
    problems = account_problems(index, worker, live_account(kubeconfig, context, settings.kueue.namespace,
                                                            worker.service_account), owner)
    if problems:
        raise NamespacePreflightError(problems)
