"""The demand trace: one JSON object per line (JSON Lines), the workloads a cluster is asked to run.

A trace is what the what-if simulator (`whatif.scheduler`) replays against a stack's Kueue objects, and what the
sandbox replays against the real Kueue. Each line is one of:

- `{"type": "trace", ...}` (optional, first line only): `horizonSeconds`, the end of the trace (the simulation stops
  there; a workload without a duration runs until then), and free `description`, `seed`, `generator`;
- `{"type": "workload", ...}`: one Kueue Workload (a Job, a TrainJob, one replica of an InferenceService): when it is
  submitted, to which LocalQueue (namespace + name), its kind, its pod count and per-pod requests, how long it runs
  once started (or when it is deleted, run or not), its WorkloadPriorityClass and, for training, how often it saves
  a checkpoint.

Times are seconds from the start of the trace. The JSON Schema of one line is `schema/demand-trace.schema.json`
(generated from the models below: `python -m whatif.trace --write`; a test fails while it is stale).
"""
from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from components.settings.errors import Problem, problems_message
from components.settings.quantity import Quantity

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema" / "demand-trace.schema.json"
"""Where the JSON Schema of a trace line lives (generated, checked by tests/unit/whatif/test_trace.py)."""

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_RESOURCE_NAME = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"

DnsLabel = Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)]
DnsSubdomain = Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253)]
ResourceName = Annotated[str, Field(pattern=_RESOURCE_NAME)]
Seconds = Annotated[float, Field(ge=0, le=10 * 365 * 86400, allow_inf_nan=False)]
PositiveSeconds = Annotated[float, Field(gt=0, le=10 * 365 * 86400, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True,
                              use_attribute_docstrings=True)


class WorkloadKind(str, Enum):
    """What a workload is, for the report: inference is called out first (its wait is the promise)."""

    INFERENCE = "inference"
    TRAINING = "training"
    OTHER = "other"


class Toleration(_Model):
    """A pod toleration (core/v1 Toleration) the simulator matches against a ResourceFlavor's nodeTaints."""

    key: Optional[str] = None
    """Taint key; omitted with operator Exists: every taint."""
    operator: Literal["Equal", "Exists"] = "Equal"
    """Equal (key and value) or Exists (key only). Default Equal."""
    value: Optional[str] = None
    """Taint value (operator Equal)."""
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None
    """Taint effect; omitted: every effect."""


class TraceHeader(_Model):
    """The optional first line: what the trace covers."""

    type: Literal["trace"]
    """Always `trace`."""
    horizon_seconds: PositiveSeconds
    """The end of the trace in seconds from its start: the simulation stops there, and a workload without
    durationSeconds runs until then."""
    description: str = ""
    """Free text."""
    seed: Optional[int] = None
    """The seed a generator used (`cohorts trace synth --seed`), for the record."""
    generator: Optional[str] = None
    """What wrote the trace (`cohorts trace synth`, `cohorts trace record`, a person)."""


class TraceWorkload(_Model):
    """One Workload of the trace."""

    type: Literal["workload"] = "workload"
    """Always `workload` (the default)."""
    name: DnsLabel
    """The Workload's name, unique in the trace (DNS-1123 label). Ties in Kueue's FIFO order break on it."""
    submit_seconds: Seconds
    """When the workload is created, in seconds from the start of the trace (its creationTimestamp: Kueue orders a
    ClusterQueue's pending workloads by priority, then by this time)."""
    namespace: DnsLabel
    """The namespace it is created in."""
    local_queue: DnsLabel
    """The LocalQueue it is submitted to (label kueue.x-k8s.io/queue-name), in `namespace`."""
    kind: WorkloadKind = WorkloadKind.OTHER
    """inference, training or other. Default other."""
    pods: int = Field(default=1, ge=1, le=100_000)
    """Pod count of its one pod set (a Job's parallelism, a TrainJob's nodes, 1 for a replica). Default 1."""
    requests: dict[ResourceName, Quantity] = Field(min_length=1)
    """Requests of each pod: resource -> Kubernetes quantity (`cpu: 8`, `memory: 32Gi`, `nvidia.com/gpu: 1`)."""
    duration_seconds: Optional[PositiveSeconds] = None
    """How long its pods run once started, in seconds of work (a preempted training workload resumes from its last
    checkpoint and runs the rest). Omitted: until deleted, which is the end of the trace (a serving replica)."""
    deleted_seconds: Optional[Seconds] = None
    """When it is deleted, in seconds from the start of the trace, whether it ran or not (a serving replica the
    autoscaler removes, a cancelled job): a pending workload leaves its queue, an admitted one gives its quota back.
    Omitted: never (it ends after durationSeconds of running, or at the horizon)."""
    priority_class: Optional[DnsSubdomain] = None
    """Its WorkloadPriorityClass (label kueue.x-k8s.io/priority-class), one of the stack's. Omitted: priority 0."""
    checkpoint_interval_seconds: Optional[PositiveSeconds] = None
    """Training: seconds of work between two checkpoints. A preempted workload loses the work since its last one
    (unless checkpointOnTermination). Omitted: it saves nothing, a preemption loses all its work."""
    checkpoint_on_termination: bool = False
    """Training: its pods save a checkpoint on SIGTERM within terminationSeconds, so a preemption loses no work.
    Default false (the bound of the promise: at most one checkpoint interval lost)."""
    termination_seconds: Seconds = 0.0
    """How long its pods take to let go of their devices once evicted (the SIGTERM flush, at most
    terminationGracePeriodSeconds): Kueue frees the quota at once, but the preemptor's pods wait this long for the
    GPUs. Default 0."""
    step_seconds: Optional[PositiveSeconds] = None
    """Training: seconds per optimizer step, to report lost work in steps. Omitted: lost work in hours only."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """The pods' nodeSelector: a ResourceFlavor whose nodeLabels contradict it is skipped (Kueue
    flavorassigner.go checkFlavorForPodSets). Default none."""
    tolerations: list[Toleration] = Field(default_factory=list)
    """The pods' tolerations, matched against a flavor's nodeTaints (NoSchedule, NoExecute). Default none."""

    @model_validator(mode="after")
    def _deleted_after_submit(self) -> TraceWorkload:
        if self.deleted_seconds is not None and self.deleted_seconds < self.submit_seconds:
            raise ValueError("deletedSeconds is before submitSeconds. Fix: delete it at or after its submission")
        return self

    @model_validator(mode="after")
    def _training_fields(self) -> TraceWorkload:
        if self.kind != WorkloadKind.TRAINING and (self.checkpoint_interval_seconds is not None
                                                  or self.checkpoint_on_termination or self.step_seconds is not None):
            raise ValueError("checkpointIntervalSeconds, checkpointOnTermination and stepSeconds describe training. "
                             "Fix: set kind training, or remove them")
        return self


TraceLine = Annotated[Union[TraceHeader, TraceWorkload], Field(discriminator="type")]
_LINE: TypeAdapter[Union[TraceHeader, TraceWorkload]] = TypeAdapter(TraceLine)


class TraceError(ValueError):
    """A trace that cannot be read. `problems` lists every problem (line and key, value, rule, fix)."""

    def __init__(self, source: str, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        super().__init__(problems_message(f"invalid trace {source}", self.problems))


class Trace(BaseModel):
    """A whole trace: its horizon and its workloads in submit order (ties: name).

    horizon_seconds: the header's, else the latest end of a workload with a duration, at least one second past the
    latest submit.
    """

    model_config = ConfigDict(frozen=True)

    horizon_seconds: float
    workloads: tuple[TraceWorkload, ...]
    description: str = ""
    seed: Optional[int] = None
    generator: Optional[str] = None

    def lines(self) -> list[str]:
        """The trace as JSON Lines (a header first), each line without its newline; `Trace.parse` reads them back."""
        header = TraceHeader(type="trace", horizon_seconds=self.horizon_seconds, description=self.description,
                             seed=self.seed, generator=self.generator)
        lines: list[TraceHeader | TraceWorkload] = [header, *self.workloads]
        return [json.dumps({"type": line.type, **line.model_dump(mode="json", by_alias=True, exclude_defaults=True)},
                           separators=(",", ":")) for line in lines]

    def write(self, path: Path) -> None:
        """Write the trace to `path` as JSON Lines (creating its directory). Raises OSError."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines()) + "\n")

    @staticmethod
    def build(workloads: Iterable[TraceWorkload], horizon_seconds: Optional[float] = None, description: str = "",
              seed: Optional[int] = None, generator: Optional[str] = None) -> Trace:
        """A Trace of `workloads` (sorted by submit time, then name). `horizon_seconds` omitted: the latest end of a
        workload with a duration, at least one second past the latest submit. Raises TraceError for names used twice
        or a workload submitted after the horizon."""
        ordered = tuple(sorted(workloads, key=lambda w: (w.submit_seconds, w.name)))
        horizon = horizon_seconds if horizon_seconds is not None else max(
            [w.submit_seconds + (w.duration_seconds or 0.0) for w in ordered]
            + [w.submit_seconds + 1.0 for w in ordered] or [1.0])
        problems = []
        seen: set[str] = set()
        for w in ordered:
            if w.name in seen:
                problems.append(Problem(f"workload {w.name}: name", w.name, "names must be unique in a trace",
                                        "rename one of them"))
            seen.add(w.name)
            if w.submit_seconds > horizon:
                problems.append(Problem(f"workload {w.name}: submitSeconds", w.submit_seconds,
                                        f"is after the trace's horizonSeconds {horizon:g}",
                                        "raise horizonSeconds in the header or drop the workload"))
        if problems:
            raise TraceError("(built)", problems)
        return Trace(horizon_seconds=horizon, workloads=ordered, description=description, seed=seed,
                     generator=generator)

    @staticmethod
    def parse(text: str, source: str = "<trace>") -> Trace:
        """Read a trace from its JSON Lines text (blank lines ignored).

        Returns:
            The Trace. Raises:
            TraceError: listing every problem: a line that is not JSON, a field of the wrong type or unknown (with
            the line number and key path), a header not on the first line, names used twice, a submit after the
            horizon, an empty trace.
        """
        problems: list[Problem] = []
        header: Optional[TraceHeader] = None
        workloads: list[TraceWorkload] = []
        first = True
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            where = f"{source}:{number}"
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                problems.append(Problem(where, raw[:60], f"not JSON ({exc.msg})", "write one JSON object per line"))
                first = False
                continue
            if isinstance(data, dict) and "type" not in data:
                data = {**data, "type": "workload"}
            try:
                line = _LINE.validate_python(data)
            except ValidationError as err:
                for item in err.errors():
                    loc = [str(p) for p in item["loc"][1:]] if item["loc"] and item["loc"][0] in (
                        "trace", "workload") else [str(p) for p in item["loc"]]
                    key = ".".join(loc) or "(line)"
                    problems.append(Problem(f"{where} {key}", item.get("input", "<absent>")
                                            if item["type"] != "missing" else "<absent>",
                                            item["msg"].replace("Value error, ", "").split(" Fix: ")[0],
                                            item["msg"].split(" Fix: ")[1] if " Fix: " in item["msg"]
                                            else "correct the value (schema/demand-trace.schema.json)"))
                first = False
                continue
            if isinstance(line, TraceHeader):
                if not first:
                    problems.append(Problem(f"{where} type", "trace", "the header must be the first line",
                                            "move it to the top"))
                header = line
            else:
                workloads.append(line)
            first = False
        if not workloads and not problems:
            problems.append(Problem(source, "", "a trace needs at least one workload line", "add workload lines"))
        if problems:
            raise TraceError(source, problems)
        try:
            return Trace.build(workloads, header.horizon_seconds if header else None,
                               header.description if header else "", header.seed if header else None,
                               header.generator if header else None)
        except TraceError as exc:
            raise TraceError(source, exc.problems) from None

    @staticmethod
    def read(path: Path) -> Trace:
        """`Trace.parse` of the file at `path`. Raises OSError, TraceError."""
        return Trace.parse(path.read_text(), str(path))


def line_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one trace line: a header or a workload, told apart by `type`."""
    schema = _LINE.json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://github.com/kueue-cohorts/kueue-cohorts/schema/demand-trace.schema.json",
            "title": "kueue-cohorts demand trace line",
            "description": (__doc__ or "").split("\n\n")[0].strip(), **schema}


def schema_text() -> str:
    """The schema file's text (`line_schema` as indented JSON with a final newline)."""
    return json.dumps(line_schema(), indent=2) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m whatif.trace [--write]`: check (exit 1 when stale) or write schema/demand-trace.schema.json."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--write"]:
        SCHEMA_PATH.write_text(schema_text())
        return 0
    if SCHEMA_PATH.exists() and SCHEMA_PATH.read_text() == schema_text():
        return 0
    print(f"{SCHEMA_PATH} is stale: run python -m whatif.trace --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
