"""`kueue-cohorts:trainingRuntime`: the settings of the PreemptibleTrainingRuntime (shape only).

Kubeflow Trainer v2.2.1 TrainingRuntime (`trainer.kubeflow.org/v1alpha1`); the runtime's manifests are rendered by
`components/model/runtime.py` and its rules (quota fit, grace period, exec form) live in the rule book
(`policy/rules/`). As in `components/settings/`, every field's meaning, unit and default is its own docstring.
"""
from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any, Optional, Sequence, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from kueue_cohorts.components.settings import checkpoint_timing as planning
from kueue_cohorts.components.settings import quantity
from kueue_cohorts.policy.rules.vocabulary import env_names

GUIDE_IMAGE = "build-harbor.alauda.cn/mlops/llamafactory0.9-cu126-amd64:v0.1.0"
"""The guide's training image (a vendor registry): the dev stack names it explicitly; no stack gets it by default."""
BASE_LIMITS = {"cpu": "2", "memory": "4Gi"}
"""The per-node limits every runtime gets when `limits` is omitted, before the stack's accelerators are added."""
IMAGE_FIX = ("set trainingRuntime.image to a training image your nodes can pull that brings python, torch and "
             "transformers (the versions of requirements-trainer.txt), pinned by tag or digest, e.g. "
             "`image: <registry>/<team>/trainer:<tag>`; there is no default, as no public image with all three "
             "could be checked from here")
"""The fix of a trainingRuntime without an image (components.settings reports it at `trainingRuntime.image`)."""
MIN_GRACE_SECONDS = 60  # the guide's terminationGracePeriodSeconds; policy CHECKPOINT_SAFE_RUNTIME's default minimum
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS-1123 subdomain (RFC 1123; at most 253 characters, checked apart): the names of most Kubernetes objects."""


def _no_boolean(kind: str, message: str) -> BeforeValidator:
    """A before-validator refusing a YAML boolean where a number is expected: pydantic's lax mode reads `true` as 1
    (`count: true` was one node, `qps: true` one request a second) while the exported JSON Schema refuses it. Takes
    pydantic's error type for the number (`int_type`, `float_type`: the settings' fix for it applies) and its
    message; the validator returns any other value unchanged and raises PydanticCustomError for a bool."""

    def refuse(value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError(kind, message)
        return value

    return BeforeValidator(refuse)


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _int32(value: Optional[int]) -> Optional[int]:
    """An after-validator: every int setting lands in an int32 field of a Kubernetes or Kueue object or of the
    provider's configuration (replicas, numNodes, backoff counts and seconds, priorities), so a value outside
    [-2^31, 2^31 - 1] is refused at its key (before it passed the check and failed inside the engine or the API
    server). Returns ``value`` (None unchanged); raises PydanticCustomError with pydantic's bound error types."""
    if value is not None and value > INT32_MAX:
        raise PydanticCustomError("less_than_equal", "Input should be less than or equal to {le}", {"le": INT32_MAX})
    if value is not None and value < INT32_MIN:
        raise PydanticCustomError("greater_than_equal", "Input should be greater than or equal to {ge}",
                                  {"ge": INT32_MIN})
    return value


_NOT_AN_INT = _no_boolean("int_type", "Input should be a valid integer, not a boolean")
WholeNumber = Annotated[int, _NOT_AN_INT, AfterValidator(_int32)]
"""An int setting: a whole number (also written as a string such as "4" or as 4.0) in int32 range, never true or
false."""
OptionalWholeNumber = Annotated[Optional[int], _NOT_AN_INT, AfterValidator(_int32)]
"""An optional int setting (null or omitted, else a WholeNumber). Not Optional[WholeNumber]: pydantic cannot put a
Field's bounds on a union member that carries a validator (the JSON Schema then shows them as unknown keywords)."""
Number = Annotated[float, _no_boolean("float_type", "Input should be a valid number, not a boolean")]
"""A float setting: a number (also written as a string such as "2.5"), never true or false."""

RECIPE = _RECIPE = (
    r"^(?:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"
    r"|llamafactory:/[^:\s]+\.ya?ml"
    r"|training-hub:(?:sft|osft)(?::/[^:\s]+\.json)?"
    r"|mini-trainer:/[^:\s]+\.json)$"
)
"""A recipe (trainer/entrypoint.py, trainer/recipes.py): `module:function`, or a recipe family with an
absolute path in the image: `llamafactory:/<config>.yaml`, `training-hub:sft|osft[:/<params>.json]`,
`mini-trainer:/<params>.json`."""
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
CONFIG_KEY = r"^[-._a-zA-Z0-9]+$"
"""A key of a Secret or ConfigMap: k8s.io/apimachinery pkg/util/validation IsConfigMapKey (`[-._a-zA-Z0-9]+`, at most
253 characters, not `.` or `..` and not starting with `..`)."""
RESERVED_ENV = env_names.RESERVED_ENV
"""Environment variables the runtime sets itself (a stack may not override them; nor may a TrainJob: the rule book's
policy/rules/trainjob_reserved_env.py; the set is declared in policy/rules/vocabulary/env_names.py)."""

Quantity = quantity.Quantity


def is_extended(resource: str) -> bool:
    """True if ``resource`` is an extended resource (a device plugin's, such as nvidia.com/gpu): a name with a domain
    outside kubernetes.io, not starting with `requests.` (k8s.io/kubernetes v1.36.3 pkg/apis/core/v1/helper/helpers.go
    IsExtendedResourceName / IsNativeResource)."""
    domain, slash, _ = resource.partition("/")
    return bool(slash) and not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io")) \
        and not resource.startswith("requests.")

RESERVED_PATHS = ("/workspace", "/opt/kueue-cohorts", "/opt/kueue-cohorts/trainer", "/dev/shm")
"""What the runtime's container already uses: the working directory and caches (/workspace), the trainer's code on
PYTHONPATH (/opt/kueue-cohorts, the read-only ConfigMap at .../trainer) and the shared-memory emptyDir."""


SYSTEM_DIRS = frozenset({"bin", "boot", "dev", "etc", "home", "proc", "root", "run", "sbin", "sys", "tmp", "usr",
                         "var"})
"""Top-level directories of the image's operating system (Filesystem Hierarchy Standard 3.0: the programs and
libraries, /etc, the users' homes /root and /home, the variable and runtime data /var, /run, /tmp) and the kernel's
interfaces (/proc, /sys, /dev): a volume mounted on or under one hides what the container needs to run (python in
/usr/lib/python3, certificates in /etc/ssl, the home's caches) or gives its files another meaning. The library
directories lib, lib32, lib64, libx32 and libexec (`_LIB_DIR`) count too."""
_LIB_DIR = re.compile(r"^lib(32|64|x32|exec)?$")


def system_path(normal: str) -> str | None:
    """The system directory (`/<name>` of SYSTEM_DIRS, or a library directory such as `/lib64`) that the normalized
    absolute path `normal` is or lies under, else None. `/` itself is not one (the caller refuses it on its own)."""
    first = normal.lstrip("/").split("/", 1)[0]
    if first in SYSTEM_DIRS or _LIB_DIR.match(first):
        return "/" + first
    return None


def _mount_path(path: str) -> str:
    """Refuse a checkpoint mount path that is `/`, has a `..` segment, is or lies under a system directory
    (`system_path`: /bin, /boot, /dev, /etc, /home, /lib*, /proc, /root, /run, /sbin, /sys, /tmp, /usr, /var), or
    equals, lies under or contains one of RESERVED_PATHS (a checkpoint volume there would hide the trainer's code or
    its working directory). The rule is by top-level directory, not a list of paths: /usr/lib/python3 and
    /etc/ssl are refused because /usr and /etc are."""
    fix = " Fix: mount the checkpoints on a path of their own, such as /mnt/checkpoints"
    if ".." in path.split("/"):
        raise ValueError(f"{path!r} has a '..' segment" + fix)
    normal = posixpath.normpath(path)
    if normal == "/":
        raise ValueError("'/' would hide the container's whole file system" + fix)
    system = system_path(normal)
    if system is not None:
        raise ValueError(f"{path!r} is under {system}, a system directory of the image (its programs, libraries, "
                         "configuration, home or the kernel's interfaces), which a volume there would hide or "
                         "replace" + fix)
    for reserved in RESERVED_PATHS:
        if normal == reserved or normal.startswith(reserved + "/") or reserved.startswith(normal + "/"):
            raise ValueError(f"{path!r} overlaps {reserved}, which the runtime's container already uses (its code, "
                             "working directory or shared memory)" + fix)
    return path


def _config_map_key(key: str) -> str:
    """Refuse the keys IsConfigMapKey refuses beyond its charset: `.`, `..` and anything starting with `..`."""
    if key in (".", "..") or key.startswith(".."):
        raise ValueError(f"{key!r} is not a valid Secret or ConfigMap key: it must not be '.' or '..' nor start with "
                         "'..' (Kubernetes IsConfigMapKey) Fix: use the key's name as it appears in the Secret's "
                         "data, e.g. token")
    return key


ConfigKey = Annotated[str, Field(pattern=CONFIG_KEY, max_length=253), AfterValidator(_config_map_key)]
"""A key of a Secret's or ConfigMap's data (Kubernetes IsConfigMapKey)."""


class KeySelector(BaseModel):
    """core/v1 SecretKeySelector / ConfigMapKeySelector: one key of a Secret or ConfigMap in the pod's namespace
    (the training namespace). Validated as the API server validates them (core/validation
    validateSecretKeySelector, validateConfigMapKeySelector)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True,
                              use_attribute_docstrings=True)

    name: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)]
    """The Secret's (ConfigMap's) name in each training namespace (DNS-1123 subdomain)."""
    key: ConfigKey
    """The key in its data (letters, digits, '-', '_', '.'; at most 253; not '.', '..' or starting with '..')."""
    optional: Optional[bool] = None
    """true: the pod starts without the variable when the Secret or key is missing. Omitted: Kubernetes' false
    (the pod does not start until it exists)."""


class EnvVarSource(BaseModel):
    """core/v1 EnvVarSource restricted to secretKeyRef and configMapKeyRef: where an environment variable's value
    comes from, instead of a literal. Exactly one of them."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True,
                              use_attribute_docstrings=True)

    secret_key_ref: Optional[KeySelector] = None
    """valueFrom.secretKeyRef: a key of a Secret of the training namespace (credentials such as HF_TOKEN: the value
    never enters the stack config, the Pulumi state or the rendered objects)."""
    config_map_key_ref: Optional[KeySelector] = None
    """valueFrom.configMapKeyRef: a key of a ConfigMap of the training namespace."""

    @model_validator(mode="after")
    def _one_source(self) -> EnvVarSource:
        if (self.secret_key_ref is None) == (self.config_map_key_ref is None):
            raise ValueError("an env source must name exactly one of secretKeyRef and configMapKeyRef (core/v1 "
                             "EnvVarSource) Fix: write {secretKeyRef: {name: <secret>, key: <key>}}")
        return self

    def manifest(self) -> dict[str, Any]:
        """The container's `valueFrom` (core/v1 EnvVarSource), camelCase, without the fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True)


LITERAL, SOURCE = "<value>", "<valueFrom>"
ENV_VALUE_TAGS = frozenset({LITERAL, SOURCE})
"""The union tags of EnvValue: pydantic puts them in error locations, components.settings drops them."""


def _env_kind(value: Any) -> Optional[str]:
    if isinstance(value, str):
        return LITERAL
    if isinstance(value, (dict, EnvVarSource)):
        return SOURCE
    return None


EnvValue = Annotated[
    Union[Annotated[str, Tag(LITERAL)], Annotated[EnvVarSource, Tag(SOURCE)]],
    Discriminator(_env_kind, custom_error_type="env_value",
                  custom_error_message="an env value must be a string (the literal value) or a mapping "
                                       "{secretKeyRef: {name, key}} or {configMapKeyRef: {name, key}}"),
]
"""One env entry's value: a literal string, or an EnvVarSource (rendered as `valueFrom`)."""


class TrainingRuntimeSettings(BaseModel):
    """`kueue-cohorts:trainingRuntime`: the preemptible TrainingRuntime of the training namespaces."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True,
                              use_attribute_docstrings=True)

    name: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] = "c12-checkpoint-runtime"
    """TrainingRuntime name (TrainJobs reference it). Default c12-checkpoint-runtime."""
    image: Annotated[str, Field(min_length=1)]
    """The training image; must bring python, torch and transformers, and the recipe family's packages: for
    `llamafactory:` the pins of requirements-recipe-llamafactory.txt (llamafactory 0.9.5, transformers 5.6.0), for
    `training-hub:` / `mini-trainer:` training-hub 0.11.2 / rhai-innovation-mini-trainer 0.9.0 and CUDA (they refuse
    to start on a node without it); pinned by tag or digest. Required: no default (the guide's image is a vendor
    registry's; the dev stack names it)."""
    recipe: Annotated[str, Field(pattern=_RECIPE)] = "trainer.demo:build_trainer"
    """module:function returning a Hugging Face Trainer, or a recipe family: llamafactory:/<config>.yaml,
    training-hub:sft|osft[:/<params>.json], mini-trainer:/<params>.json (trainer/RECIPES.md). Default
    trainer.demo:build_trainer."""
    checkpoint_mount_path: Annotated[str, Field(pattern=r"^/[^:]*$"), AfterValidator(_mount_path)] = "/mnt/checkpoints"
    """Absolute path where the checkpoint PVC is mounted: a path of its own, never `/`, a system directory of the
    image or under one (/bin, /boot, /dev, /etc, /home, /lib*, /proc, /root, /run, /sbin, /sys, /tmp, /usr, /var),
    nor over the trainer's code or working directory. Default /mnt/checkpoints."""
    num_nodes: WholeNumber = Field(default=1, ge=1)
    """mlPolicy.numNodes (>= 1). numNodes x per-node requests must fit the training ClusterQueue's nominalQuota +
    borrowingLimit. Default 1."""
    requests: dict[str, Quantity] = Field(default_factory=lambda: {"cpu": "1", "memory": "2Gi"})
    """Per-node requests. Default cpu 1, memory 2Gi."""
    limits: Optional[dict[str, Quantity]] = None
    """Per-node limits. Omitted: cpu 2, memory 4Gi and 1 of each extended resource (a name with a domain, such as
    nvidia.com/gpu) the training ClusterQueue covers: one GPU on a standard NVIDIA device-plugin cluster. A
    fractional GPU (HAMi's nvidia.com/gpucores, gpumem) needs explicit limits, as the dev stack writes them."""
    seconds_per_step: Number = Field(default=5.0, gt=0)
    """Measured seconds per optimizer step (> 0). Default 5."""
    max_lost_work_seconds: Number = Field(default=500.0, gt=0)
    """Hard-stop loss budget in seconds; saveSteps = floor(budget / secondsPerStep). Default 500 (100 steps)."""
    checkpoint_save_seconds: Number = Field(default=30.0, gt=0)
    """Seconds to write one checkpoint (> 0), put on the runtime as kueue-cohorts/checkpoint-save-seconds.
    Default 30."""
    termination_grace_period_seconds: OptionalWholeNumber = Field(default=None, ge=0)
    """Pod grace period in seconds; must be above checkpointSaveSeconds and at least 60. Omitted: save + one
    step, rounded up, at least 60."""
    image_pull_secrets: list[Annotated[str, Field(pattern=DNS_SUBDOMAIN)]] = Field(default_factory=list)
    """Secrets in the training namespace for pulling the image. Default none."""
    env: dict[Annotated[str, Field(pattern=_ENV_NAME)], EnvValue] = Field(default_factory=dict)
    """Extra environment for the recipe, name -> a literal string, or {secretKeyRef: {name, key}} /
    {configMapKeyRef: {name, key}} for a key of a Secret / ConfigMap of the training namespace (rendered as the
    container's valueFrom). Credentials go through secretKeyRef: a secret config value (`pulumi config set
    --secret`) is refused here, as a literal would put it in plain text into the TrainingRuntime, the Pulumi state
    and the rendered objects. The runtime's own variables and the Trainer's PET_* are refused. Default none."""

    @model_validator(mode="after")
    def _plan(self) -> TrainingRuntimeSettings:
        planning.save_steps(self.max_lost_work_seconds, self.seconds_per_step)
        reserved = sorted(n for n in self.env if n in RESERVED_ENV or n.startswith("PET_"))
        if reserved:
            raise ValueError(
                f"env {reserved} is reserved (set by the runtime: {', '.join(sorted(RESERVED_ENV))}; the Trainer's "
                "PET_*): rename those variables"
            )
        for resource, limit in self.resolved_limits.items():
            request = self.requests.get(resource)
            if request is not None and quantity.parse(request) > quantity.parse(limit):
                raise ValueError(
                    f"requests[{resource!r}] = {request} exceeds limits[{resource!r}] = {limit}: a request must not "
                    "exceed its limit (core/v1 ResourceRequirements); lower the request or raise the limit"
                )
        return self

    @property
    def save_steps(self) -> int:
        """Optimizer steps between periodic checkpoints (planning.save_steps of the budget and step time)."""
        return planning.save_steps(self.max_lost_work_seconds, self.seconds_per_step)

    @property
    def grace_period_seconds(self) -> int:
        """terminationGracePeriodSeconds: the explicit value, else checkpoint save + one step rounded up, at least
        MIN_GRACE_SECONDS (60: the guide's value and the policy pack's default minTerminationGracePeriodSeconds)."""
        if self.termination_grace_period_seconds is not None:
            return self.termination_grace_period_seconds
        return planning.grace_period_seconds(self.checkpoint_save_seconds, self.seconds_per_step, MIN_GRACE_SECONDS)

    @property
    def resolved_limits(self) -> dict[str, str]:
        """The per-node limits written on the container: `limits`, else BASE_LIMITS (a runtime of a stack gets the
        stack's accelerators added by `with_accelerators`, which components.settings applies once)."""
        return dict(BASE_LIMITS) if self.limits is None else dict(self.limits)

    def with_accelerators(self, covered: Sequence[str]) -> TrainingRuntimeSettings:
        """Return these settings with omitted `limits` resolved against the training ClusterQueue's `covered`
        resources (coveredResources, first-seen order): BASE_LIMITS plus 1 of each extended resource among them
        (``is_extended``). Explicit limits are returned unchanged (self)."""
        if self.limits is not None:
            return self
        limits = dict(BASE_LIMITS)
        limits.update({resource: "1" for resource in covered if is_extended(resource)})
        return self.model_copy(update={"limits": limits})

    def effective_requests(self) -> dict[str, str]:
        """Per-node requests as the API server defaults them: a resource with only a limit requests its limit."""
        merged = self.resolved_limits
        merged.update(self.requests)
        return merged
