"""The settings-only rules of `kueue-cohorts:multiKueue`: names, references and where each key applies.

What the worker clusters receive (namespaces, LocalQueues, runtime, RBAC) is judged on the rendered objects by the rule
book (`policy/rules/multikueue_workers_ready.py`, the same rule the policy pack runs across the stack's providers); what
stays here is about the config as written: worker and Secret names used twice, a dispatch entry naming a ClusterQueue or
a worker the stack does not have, AdmissionCheck names Kueue cannot take, the keys that only apply to one cluster mode,
and a Kueue whose MultiKueue feature is off.

Upstream: kubernetes-sigs/kueue apis/kueue/v1beta2/multikueue_types.go (MultiKueueConfig `spec.clusters`: 1 to 20,
unique) and admissioncheck_types.go (AdmissionCheckParametersReference `name`: a DNS-1123 label), v0.19.2;
pkg/controller/admissionchecks/multikueue/clusterqueue.go (one MultiKueue AdmissionCheck per ClusterQueue).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

import yaml

from kueue_cohorts.components.checks.repeats import repeats
from kueue_cohorts.components.model.kueue_chart import HELM_RELEASE_SECRET_PREFIX, kueue_credentials
from kueue_cohorts.components.settings import PROJECT, ClusterMode, ManagerTrainer, Settings, config_key, quantity
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.components.settings.multikueue import MAX_CLUSTERS
from kueue_cohorts.components.settings.runtime import DNS_SUBDOMAIN
from kueue_cohorts.policy.rules.quantities import QUANTITIES
from kueue_cohorts.policy.rules.vocabulary.resource_values import quantity_problem

MK = "multiKueue"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def key(*parts: Any) -> str:
    """`kueue-cohorts:<parts...>` as printed in messages."""
    return config_key(f"{PROJECT}:{parts[0]}", *parts[1:])


def cluster_queue_names(settings: Settings) -> list[str]:
    """Every ClusterQueue name of the stack's layouts, in config order (inference, training, then each shared-pool
    tenant's `clusterQueue` or `<name>-cq`)."""
    names: list[str] = []
    it, sp = settings.inference_training, settings.shared_pool
    if it is not None:
        names += [it.inference.cluster_queue, it.training.cluster_queue]
    if sp is not None:
        names += [t.cluster_queue_name for t in sp.tenants]
    return names


def check_names(settings: Settings) -> list[Problem]:
    """Worker names and their Secret names are each used once; each ClusterQueue dispatches once; each dispatch entry
    names a ClusterQueue of the stack and declared workers, each once, at most 20 (MultiKueueConfig `spec.clusters`);
    the AdmissionCheck / MultiKueueConfig name is a DNS-1123 label and used once."""
    mk = settings.multi_kueue
    if mk is None:
        return []
    problems: list[Problem] = []
    workers = [(w.name, (MK, "workers", i, "name")) for i, w in enumerate(mk.workers)]
    repeated = {name for name, _, _ in repeats(workers)}
    # A derived Secret name repeats with its worker's name: reported once, as the worker name.
    secrets = [(w.secret.resolved_name(w.name),
                (MK, "workers", i, "secret", "name") if w.secret.name else (MK, "workers", i, "name"))
               for i, w in enumerate(mk.workers) if w.secret.name or w.name not in repeated]
    for name, parts, first in repeats(workers):
        problems.append(Problem(key(*parts), name, f"the worker name '{name}' is already used at {key(*first)}",
                                "give each worker cluster its own name (it names its MultiKueueCluster)"))
    for name, parts, first in repeats(secrets):
        problems.append(Problem(key(*parts), name, f"the kubeconfig Secret '{name}' is already used at "
                                f"{key(*first)}: two workers would read one kubeconfig",
                                "give each worker its own secret.name"))
    queues = set(cluster_queue_names(settings))
    declared = {w.name for w in mk.workers}
    dispatched = [(d.cluster_queue, (MK, "dispatch", i, "clusterQueue")) for i, d in enumerate(mk.dispatch)]
    for name, parts, first in repeats(dispatched):
        problems.append(Problem(key(*parts), name, f"the ClusterQueue '{name}' already dispatches at {key(*first)}; "
                                "Kueue makes a ClusterQueue with two MultiKueue AdmissionChecks inactive "
                                "(MultipleMultiKueueAdmissionChecks)", "list its workers under one dispatch entry"))
    checks = [(d.check_name(), (MK, "dispatch", i, "name") if d.name else (MK, "dispatch", i, "clusterQueue"))
              for i, d in enumerate(mk.dispatch)]
    for name, parts, first in repeats(checks):
        problems.append(Problem(key(*parts), name, f"the AdmissionCheck name '{name}' is already used at "
                                f"{key(*first)}", "give the dispatch entry its own name"))
    for i, entry in enumerate(mk.dispatch):
        base = (MK, "dispatch", i)
        if entry.cluster_queue not in queues:
            problems.append(Problem(key(*base, "clusterQueue"), entry.cluster_queue,
                                    "not a ClusterQueue of this stack", "name one of: " + (", ".join(sorted(queues))
                                                                          or "(the stack declares none)")))
        if entry.name is None and (len(entry.check_name()) > 63 or not _DNS_LABEL.match(entry.check_name())):
            problems.append(Problem(key(*base, "clusterQueue"), entry.cluster_queue,
                                    f"the AdmissionCheck's MultiKueueConfig would be named '{entry.check_name()}', "
                                    "and an AdmissionCheck's parameters name is a DNS-1123 label of at most 63 "
                                    "characters", "set name: a DNS-1123 label of at most 63 characters"))
        for j, worker in enumerate(entry.workers):
            if worker not in declared:
                problems.append(Problem(key(*base, "workers", j), worker, "not a worker of multiKueue.workers",
                                        "name one of: " + ", ".join(sorted(declared))))
        for name, parts, first in repeats([(w, base + ("workers", j)) for j, w in enumerate(entry.workers)]):
            problems.append(Problem(key(*parts), name, f"the worker '{name}' is already listed at {key(*first)} "
                                    "(MultiKueueConfig spec.clusters must be unique)", "list each worker once"))
        if len(entry.workers) > MAX_CLUSTERS:  # the shape refuses it too; kept for direct callers
            problems.append(Problem(key(*base, "workers"), entry.workers,
                                    f"a MultiKueueConfig takes at most {MAX_CLUSTERS} clusters",
                                    f"list at most {MAX_CLUSTERS} workers"))
    return problems


def check_targets(settings: Settings) -> list[Problem]:
    """Where each worker key applies: kubeconfig and context only in cluster mode kubeconfig, where the context is
    required and must not be the manager's own; secret.fromFile only in mode kubeconfig (the sandbox writes the
    kubeconfig itself; a render directory never receives credentials)."""
    mk = settings.multi_kueue
    if mk is None:
        return []
    mode = settings.cluster.mode
    problems: list[Problem] = []
    for i, worker in enumerate(mk.workers):
        base = (MK, "workers", i)
        if mode != ClusterMode.KUBECONFIG:
            for field, value in (("kubeconfig", worker.kubeconfig), ("context", worker.context)):
                if value is not None:
                    problems.append(Problem(key(*base, field), value, f"{field} applies to cluster mode kubeconfig "
                                            f"only (mode is {mode.value}: "
                                            + ("the worker sandbox's own kubeconfig is used)" if mode ==
                                               ClusterMode.SANDBOX else "no cluster is reached)"),
                                            f"remove {field}, or set cluster.mode: kubeconfig"))
        elif worker.context is None:
            problems.append(Problem(key(*base, "context"), "<absent>", "a worker needs its own kubeconfig context: "
                                    "the file's current context may be the manager's", "add context: the worker's "
                                    "context in its kubeconfig"))
        elif (worker.context == settings.cluster.context
              and (worker.kubeconfig or "") == (settings.cluster.kubeconfig or "")):
            problems.append(Problem(key(*base, "context"), worker.context, "this is the manager's own cluster "
                                    "(cluster.kubeconfig and cluster.context): a cluster cannot be its own worker",
                                    "name the worker cluster's context"))
        if worker.secret.from_file is not None and mode != ClusterMode.KUBECONFIG:
            why = ("the sandbox writes the worker's kubeconfig itself" if mode == ClusterMode.SANDBOX else
                   "a render directory would receive the credentials in plain text")
            problems.append(Problem(key(*base, "secret", "fromFile"), worker.secret.from_file,
                                    f"fromFile applies to cluster mode kubeconfig only ({why})",
                                    "remove fromFile" + (" and create the Secret yourself (docs/multikueue.md)"
                                                         if mode == ClusterMode.RENDER else "")))
    return problems


def check_workers_capacity(settings: Settings) -> list[Problem]:
    """Each worker's nodePools pass the rule book's quantity rule (as `nodePools`), and a pool's resourceFlavor names
    a ResourceFlavor of the stack."""
    mk = settings.multi_kueue
    if mk is None:
        return []
    flavors = settings.flavor_names()
    problems: list[Problem] = []
    for i, worker in enumerate(mk.workers):
        for j, pool in enumerate(worker.node_pools or []):
            base = (MK, "workers", i, "nodePools", j)
            for resource, amount in pool.capacity.items():
                found = quantity_problem(resource, amount)
                if found is not None:
                    problems.append(Problem(key(*base, "capacity", resource), amount, found[0], found[1],
                                            QUANTITIES.name))
                elif quantity.parse(amount) < 0:
                    problems.append(Problem(key(*base, "capacity", resource), amount, "capacity is not negative",
                                            "write the node's allocatable amount"))
            if pool.resource_flavor is not None and pool.resource_flavor not in flavors:
                problems.append(Problem(key(*base, "resourceFlavor"), pool.resource_flavor,
                                        "not a ResourceFlavor of this stack", f"name one of: {', '.join(flavors)}"))
    return problems


def check_feature_gate(settings: Settings) -> list[Problem]:
    """Kueue's MultiKueue feature (Beta, on by default in 0.19) is not switched off while the stack dispatches."""
    if settings.multi_kueue is not None and settings.kueue.feature_gates.get("MultiKueue") is False:
        return [Problem(key("kueue", "featureGates", "MultiKueue"), False, "with MultiKueue off, Kueue never "
                        "dispatches and every dispatching ClusterQueue stays inactive",
                        "remove featureGates.MultiKueue, or remove multiKueue")]
    return []


TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"
PINNED_TRAINER = "v2.2.1"
"""The Kubeflow Trainer the project pins and tests (toolchain/versions.toml); its TrainJob controller reconciles
every TrainJob whatever its spec.managedBy (pkg/controller/trainjob_controller.go, kubeflow/trainer#3632)."""


def check_trainjob_dispatch(settings: Settings) -> list[Problem]:
    """A ClusterQueue whose namespaces run the stack's trainingRuntime dispatches only when nothing on the manager
    reconciles TrainJobs (`multiKueue.managerTrainer: CRDsOnly`): Kueue unsuspends the manager's TrainJob once its
    Workload is dispatched, and the pinned Trainer ignores spec.managedBy, so the TrainJob would also run on the
    manager (seen in the sandbox: a JobSet, a Job and a running Pod on the manager next to the worker's)."""
    mk, layout = settings.multi_kueue, settings.inference_training
    if (mk is None or layout is None or settings.training_runtime is None or mk.manager_trainer ==
            ManagerTrainer.CRDS_ONLY or TRAINJOB_FRAMEWORK not in settings.kueue.integrations):
        return []
    return [Problem(key(MK, "dispatch", i, "clusterQueue"), entry.cluster_queue,
                    f"its namespaces run the trainingRuntime's TrainJobs, and the Kubeflow Trainer {PINNED_TRAINER} "
                    "on the manager ignores spec.managedBy (kubeflow/trainer#3632): a dispatched TrainJob would run "
                    "on the manager as well as on the worker",
                    "run only the Trainer's CRDs on the manager and set multiKueue.managerTrainer: CRDsOnly (a "
                    "Trainer with kubeflow/trainer#3681 honours managedBy), or dispatch another ClusterQueue")
            for i, entry in enumerate(mk.dispatch) if entry.cluster_queue == layout.training.cluster_queue]


def stack_is_protected(settings: Settings) -> bool:
    """Whether the stack is protected as `deploy` treats it from its file (deploy/stackfile.py): `protected: true`,
    or cluster mode kubeconfig without an explicit `protected: false` (a production stack name protects it too; the
    name is not part of the settings)."""
    if settings.protected:
        return True
    return settings.cluster.mode == ClusterMode.KUBECONFIG and "protected" not in settings.model_fields_set


def check_credentials(settings: Settings) -> list[Problem]:
    """The worker credential is the stack's own and its narrowest form:

    - a worker's kubeconfig Secret (on the manager, in Kueue's namespace) and its ServiceAccount (on the worker, in
      Kueue's namespace) are never one of Kueue's own credentials (`kueue_chart.kueue_credentials`: the manager's
      ServiceAccount, the webhook, metrics and visibility certificates, Helm's release Secrets, the namespace's
      `default` account): the stack would overwrite them or bind the worker role to Kueue's manager;
    - a protected stack (`stack_is_protected`) does not store the worker kubeconfig in its state
      (`secret.fromFile`): the state is decrypted by every holder of the stack's passphrase (the pull-request preview
      among them); the Secret is created outside the stack and only referenced by `secret.name` (docs/multikueue.md).
    """
    mk = settings.multi_kueue
    if mk is None:
        return []
    own = kueue_credentials(settings.kueue.values)
    protected = stack_is_protected(settings)
    problems: list[Problem] = []
    for i, worker in enumerate(mk.workers):
        base = (MK, "workers", i)
        secret = worker.secret.resolved_name(worker.name)
        if secret in own["Secret"] or secret.startswith(HELM_RELEASE_SECRET_PREFIX):
            problems.append(Problem(
                key(*base, "secret", "name") if worker.secret.name else key(*base, "name"), secret,
                f"the kubeconfig Secret '{secret}' would be one of Kueue's own Secrets in {settings.kueue.namespace} "
                "(its serving certificates or Helm's release record): the stack would overwrite it",
                "give secret.name a name of its own, e.g. <worker>-multikueue"))
        if worker.service_account in own["ServiceAccount"]:
            problems.append(Problem(
                key(*base, "serviceAccount"), worker.service_account,
                f"the ServiceAccount '{worker.service_account}' is Kueue's own in {settings.kueue.namespace} (its "
                "manager's account, or the namespace's default one every pod without an account runs as): the worker "
                "role would be granted to it", "use an account of its own, e.g. multikueue (the default)"))
        if protected and worker.secret.from_file is not None:
            problems.append(Problem(
                key(*base, "secret", "fromFile"), worker.secret.from_file,
                "a protected stack does not store a worker's kubeconfig in its state: whoever holds the stack's "
                "passphrase (a pull-request preview among them) could decrypt it",
                f"create the Secret {secret} in {settings.kueue.namespace} outside the stack (docs/multikueue.md, "
                "'The worker credential'), remove fromFile and keep secret.name"))
    return problems


CHECKS = (check_names, check_targets, check_workers_capacity, check_feature_gate, check_trainjob_dispatch,
          check_credentials)
"""Every settings-only check of `multiKueue`, in config order."""


def kubeconfig_problems(text: str) -> list[str]:
    """What Kueue's MultiKueue refuses in a worker kubeconfig (the Secret's `kubeconfig`), one clause each; empty when
    it would connect. Mirrors pkg/controller/admissionchecks/multikueue/multikueuecluster.go `validateKubeconfig` and
    `validateRestConfig` (Kueue v0.19.2, feature MultiKueueAllowInsecureKubeconfigs off): no tokenFile, no
    insecure-skip-tls-verify, certificate-authority-data rather than a file path, a server whose host is an IP or a
    DNS-1123 subdomain, no basic auth, exec plugin or auth provider; and (the manager's pod has none of the deploy
    machine's files) no client-certificate or client-key file path. Pure; never raises."""
    try:
        config = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as err:  # ValueError: e.g. a YAML 1.1 timestamp out of range
        return [f"it is not YAML ({(str(err).splitlines() or [type(err).__name__])[0]})"]
    if not isinstance(config, dict):
        return ["it is not a kubeconfig (a YAML mapping with clusters, users and contexts)"]
    problems: list[str] = []
    clusters = [c for c in _items(config.get("clusters")) if isinstance(c, dict)]
    if not clusters:
        problems.append("it names no cluster")
    for entry in clusters:
        name, cluster = entry.get("name"), _mapping(entry.get("cluster"))
        if not isinstance(entry.get("cluster"), dict):
            problems.append(f"cluster {name} is not a mapping (server, certificate-authority-data)")
        if cluster.get("insecure-skip-tls-verify"):
            problems.append(f"cluster {name} skips TLS verification (insecure-skip-tls-verify)")
        if cluster.get("certificate-authority"):
            problems.append(f"cluster {name} names a certificate-authority file; write certificate-authority-data")
        server = str(cluster.get("server") or "")
        try:
            host = urlsplit(server).hostname or ""
        except ValueError:  # e.g. an unclosed IPv6 bracket: no host Kueue could parse either
            host = ""
        if not server:
            problems.append(f"cluster {name} has no server URL")
        elif not (_is_ip(host) or re.match(DNS_SUBDOMAIN, host.lower())):
            problems.append(f"cluster {name}'s server {server} is not an IP address or DNS name Kueue trusts")
    for entry in [u for u in _items(config.get("users")) if isinstance(u, dict)]:
        name, user = entry.get("name"), _mapping(entry.get("user"))
        if entry.get("user") is not None and not isinstance(entry.get("user"), dict):
            problems.append(f"user {name} is not a mapping (token or client certificate data)")
        for key, what in (("tokenFile", "a tokenFile"), ("username", "basic auth"), ("password", "basic auth"),
                          ("exec", "an exec plugin"), ("auth-provider", "an auth provider"),
                          ("client-certificate", "a client-certificate file"), ("client-key", "a client-key file")):
            if user.get(key):
                problems.append(f"user {name} uses {what}")
    return list(dict.fromkeys(problems))


def _items(value: object) -> list[object]:
    """`value` when it is a list, else empty (a malformed kubeconfig's `clusters` or `users`)."""
    return value if isinstance(value, list) else []


def _mapping(value: object) -> dict[object, object]:
    """`value` when it is a mapping, else empty (a malformed kubeconfig entry's `cluster` or `user`)."""
    return value if isinstance(value, dict) else {}


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
