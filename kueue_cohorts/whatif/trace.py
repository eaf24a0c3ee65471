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
(generated from the models below: `python -m kueue_cohorts.whatif.trace --write`; a test fails while it is stale).
"""
from __future__ import annotations

import io
import json
import sys
from enum import Enum
from pathlib import Path
from typing import IO, Annotated, Any, Iterable, Iterator, Literal, Mapping, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from kueue_cohorts import PROJECT_ROOT
from kueue_cohorts.components.settings.errors import Problem, problems_message
from kueue_cohorts.components.settings.quantity import Quantity

SCHEMA_PATH = PROJECT_ROOT / "schema" / "demand-trace.schema.json"
"""Where the JSON Schema of a trace line lives (generated, checked by tests/unit/whatif/test_trace.py)."""

MAX_LINE_BYTES = 65_536
"""The longest trace line read, in bytes without its newline (a workload line is about 300): a longer one is a
problem of its line, and the reader never holds more than this of it."""
MAX_LINES = 1_000_000
"""The most lines a trace may have (a week of 100,000 workloads is 100,001): the reader stops at the next one with a
problem."""
MAX_DEPTH = 8
"""The deepest JSON nesting of a line (a workload line needs 3: the line, `tolerations`, one toleration)."""
MAX_SHOWN = 50
"""The most problems a TraceError's message lists (all are in `problems`); the rest are counted."""

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_RESOURCE_NAME = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"

DnsLabel = Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)]
DnsSubdomain = Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253)]
ResourceName = Annotated[str, Field(pattern=_RESOURCE_NAME)]
Seconds = Annotated[float, Field(ge=0, le=10 * 365 * 86400, allow_inf_nan=False)]
PositiveSeconds = Annotated[float, Field(gt=0, le=10 * 365 * 86400, allow_inf_nan=False)]
PastSeconds = Annotated[float, Field(ge=-10 * 365 * 86400, le=0, allow_inf_nan=False)]


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
    running_since_seconds: Optional[PastSeconds] = None
    """A workload already running when the trace starts (the state at the change): when its quota was reserved, in
    seconds before the start (<= 0; `cohorts trace record` writes it from the QuotaReserved condition). The
    simulation begins with it admitted in `flavors`, whatever the quota: Kueue evicts nothing when a ClusterQueue's
    quota is lowered under it (kubernetes-sigs/kueue#5176; pkg/cache/scheduler/cache.go UpdateClusterQueue keeps
    the admitted workloads and their usage, v0.19.2), and their usage above the new nominalQuota blocks admissions
    and borrowing until it drains. Needs submitSeconds 0; durationSeconds counts from its start (the work done
    before the trace is done). Omitted: submitted at submitSeconds like any other."""
    flavors: dict[ResourceName, DnsSubdomain] = Field(default_factory=dict)
    """A running workload's ResourceFlavor per resource (status.admission.podSetAssignments[0].flavors). Omitted
    resources: the first flavor of the ClusterQueue's resource group its pods may use."""

    @model_validator(mode="after")
    def _deleted_after_submit(self) -> TraceWorkload:
        if self.deleted_seconds is not None and self.deleted_seconds < self.submit_seconds:
            raise ValueError("deletedSeconds is before submitSeconds. Fix: delete it at or after its submission")
        return self

    @model_validator(mode="after")
    def _running_fields(self) -> TraceWorkload:
        if self.running_since_seconds is None:
            if self.flavors:
                raise ValueError("flavors describe a workload running at the start. Fix: set runningSinceSeconds, "
                                 "or remove flavors")
            return self
        if self.submit_seconds != 0:
            raise ValueError("a workload running at the start (runningSinceSeconds) is submitted at 0. Fix: set "
                             "submitSeconds 0")
        if self.duration_seconds is not None and self.duration_seconds <= -self.running_since_seconds:
            raise ValueError("durationSeconds ends before the trace starts (it counts from runningSinceSeconds). "
                             "Fix: leave the workload out, or raise durationSeconds")
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
        message = problems_message(f"invalid trace {source}", self.problems[:MAX_SHOWN])
        if len(self.problems) > MAX_SHOWN:
            message = message.replace(f"{MAX_SHOWN} problems", f"{len(self.problems)} problems (the first "
                                      f"{MAX_SHOWN} below)", 1)
        super().__init__(message)


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
    source: str = ""
    """Where the trace was read from (`Trace.read`'s path), "" when built."""
    line_numbers: Mapping[str, int] = {}
    """Workload name -> its line in `source` (read traces only), for problems found later (an unknown queue)."""

    def __eq__(self, other: object) -> bool:
        """Equal content: the horizon, the workloads, the header's fields; where it was read from does not count."""
        if not isinstance(other, Trace):
            return NotImplemented
        return bool(self.model_dump(exclude={"source", "line_numbers"})
                    == other.model_dump(exclude={"source", "line_numbers"}))

    __hash__ = None  # type: ignore[assignment]

    def where(self, name: str) -> str:
        """`<source>:<line>` of workload `name` (its name alone when the trace was not read from text)."""
        line = self.line_numbers.get(name)
        return f"{self.source}:{line}" if line is not None and self.source else f"workload {name}"

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
              seed: Optional[int] = None, generator: Optional[str] = None, source: str = "",
              line_numbers: Optional[Mapping[str, int]] = None) -> Trace:
        """A Trace of `workloads` (sorted by submit time, then name). `horizon_seconds` omitted: the latest end of a
        workload with a duration, at least one second past the latest submit. `source` and `line_numbers` (name ->
        line) say where each workload was read. Raises TraceError for names used twice or a workload submitted after
        the horizon (each problem at `source:line` when known)."""
        numbers = dict(line_numbers or {})
        ordered = tuple(sorted(workloads, key=lambda w: (w.submit_seconds, w.name)))
        horizon = horizon_seconds if horizon_seconds is not None else max(
            [w.submit_seconds + (w.duration_seconds or 0.0) for w in ordered]
            + [w.submit_seconds + 1.0 for w in ordered] or [1.0])
        problems = []
        seen: set[str] = set()
        def where(w: TraceWorkload) -> str:
            line = numbers.get(w.name)
            return f"{source}:{line}" if source and line is not None else f"workload {w.name}:"
        for w in ordered:
            if w.name in seen:
                problems.append(Problem(f"{where(w)} name", w.name, "names must be unique in a trace",
                                        "rename one of them"))
            seen.add(w.name)
            if w.submit_seconds > horizon:
                problems.append(Problem(f"{where(w)} submitSeconds", w.submit_seconds,
                                        f"is after the trace's horizonSeconds {horizon:g}",
                                        "raise horizonSeconds in the header or drop the workload"))
        if problems:
            raise TraceError(source or "(built)", problems)
        return Trace(horizon_seconds=horizon, workloads=ordered, description=description, seed=seed,
                     generator=generator, source=source, line_numbers=numbers)

    def starting_from(self, state: Trace) -> Trace:
        """This demand trace replayed from the cluster's ``state`` (``cohorts trace record`` of zero seconds, whose
        0 is now: its running lines keep their ``runningSinceSeconds`` and ``flavors``, its pending ones wait from 0):
        the state's lines and this trace's, in one Trace whose 0 is the state's, with this trace's horizon (at least
        one second). This trace's times are read as seconds from now. A state workload with no durationSeconds runs
        to the horizon (the cluster does not say when it ends). Returns the Trace; raises TraceError when a name is
        in both (a trace recorded from the same cluster already begins with its state)."""
        mine = {w.name for w in self.workloads}
        clash = [w for w in state.workloads if w.name in mine]
        if clash:
            raise TraceError(self.source or "(built)", [Problem(
                f"workload {w.name}: name", w.name, "is also a workload of the live cluster's state",
                "a trace recorded from this cluster already begins with its state: drop --from-cluster, or rename the "
                "trace's workload") for w in clash])
        return Trace.build([*state.workloads, *self.workloads], max(1.0, self.horizon_seconds),
                           self.description or state.description, self.seed, self.generator, self.source,
                           self.line_numbers)

    @staticmethod
    def parse(text: str, source: str = "<trace>") -> Trace:
        """Read a trace from its JSON Lines text (blank lines ignored): `Trace.parse_stream` of its UTF-8 bytes.

        Raises TraceError listing every problem (see `parse_stream`).
        """
        return Trace.parse_stream(io.BytesIO(text.encode("utf-8", "surrogatepass")), source)

    @staticmethod
    def parse_stream(stream: IO[bytes], source: str = "<trace>") -> Trace:
        """Read a trace from a binary stream of JSON Lines (lines end at `\\n`; blank lines ignored; a UTF-8
        byte-order mark on the first line is skipped).

        Returns:
            The Trace, with each workload's line number. Raises:
            TraceError: listing every problem, each at `source:line` with the key, the value, the rule and the fix:
            a line that is not UTF-8 (or is UTF-16: NUL bytes), longer than MAX_LINE_BYTES, nested deeper than
            MAX_DEPTH, not JSON, not a JSON object, a field of the wrong type or unknown, a header not on the first
            line, names used twice, a submit after the horizon, more than MAX_LINES lines, an empty trace. Never
            anything else, whatever the bytes.
        """
        problems: list[Problem] = []
        header: Optional[TraceHeader] = None
        workloads: list[TraceWorkload] = []
        numbers: dict[str, int] = {}
        first = True
        for number, raw in _text_lines(stream, source, problems):
            if raw is None:
                first = False
                continue
            where = f"{source}:{number}"
            data = _json_object(raw, where, problems)
            if data is None:
                first = False
                continue
            if "type" not in data:
                data = {**data, "type": "workload"}
            try:
                line = _LINE.validate_python(data)
            except ValidationError as err:
                problems += _validation_problems(err, where)
                first = False
                continue
            if isinstance(line, TraceHeader):
                if not first:
                    problems.append(Problem(f"{where} type", "trace", "the header must be the first line",
                                            "move it to the top"))
                header = line
            else:
                workloads.append(line)
                numbers.setdefault(line.name, number)
            first = False
        if not workloads and not problems:
            problems.append(Problem(source, "", "a trace needs at least one workload line", "add workload lines"))
        if problems:
            raise TraceError(source, problems)
        return Trace.build(workloads, header.horizon_seconds if header else None,
                           header.description if header else "", header.seed if header else None,
                           header.generator if header else None, source, numbers)

    @staticmethod
    def read(path: Path) -> Trace:
        """`Trace.parse_stream` of the file at `path`, read line by line (never more than MAX_LINE_BYTES of a line
        in memory).

        Raises:
            TraceError: every problem of the trace, or one problem when the file cannot be opened (missing, a
            directory, not readable), with the path and the fix.
        """
        try:
            with path.open("rb") as stream:
                return Trace.parse_stream(stream, str(path))
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise TraceError(str(path), [Problem(
                str(path), "<unreadable>", f"cannot be read as a trace file ({reason})",
                "give the path of a JSON Lines trace (`kueue-cohorts trace synth --out FILE` or `kueue-cohorts "
                "trace record --out FILE` writes one)")]) from None


def _text_lines(stream: IO[bytes], source: str, problems: list[Problem]) -> Iterator[tuple[int, Optional[str]]]:
    """(line number, text) of each non-blank line of `stream`; text None for a line that is a problem (added to
    `problems`: too long, not UTF-8, NUL bytes). Stops after MAX_LINES lines with a problem."""
    number = 0
    while True:
        chunk = stream.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            return
        number += 1
        where = f"{source}:{number}"
        if number > MAX_LINES:
            problems.append(Problem(where, "<more lines>", f"a trace has at most {MAX_LINES:,} lines",
                                    "split the trace, or shorten it (a week of 100,000 workloads fits)"))
            return
        if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):  # skip the rest of the line, a bounded piece at a time
                chunk = stream.readline(MAX_LINE_BYTES)
            problems.append(Problem(where, "<line>", f"is longer than {MAX_LINE_BYTES:,} bytes",
                                    "write one workload per line (a workload line is about 300 bytes)"))
            yield number, None
            continue
        if not chunk.strip():
            continue
        if b"\x00" in chunk:
            problems.append(Problem(where, "<NUL bytes>", "has NUL bytes: the file is UTF-16 or binary, not UTF-8 "
                                    "text", "save the trace as UTF-8 (iconv -f UTF-16 -t UTF-8)"))
            yield number, None
            continue
        try:
            text = chunk.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(where, f"0x{chunk[exc.start]:02x}", f"is not UTF-8 (byte {exc.start + 1} of "
                                    "the line)", "save the trace as UTF-8 (iconv -f <its encoding> -t UTF-8)"))
            yield number, None
            continue
        yield number, text


def _too_deep(text: str) -> bool:
    """Whether the JSON `text` nests objects and arrays deeper than MAX_DEPTH (brackets inside strings do not
    count). Cheap for ordinary lines: only a line with more than MAX_DEPTH opening brackets is scanned."""
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return False
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in "}]":
            depth -= 1
    return False


def _json_object(text: str, where: str, problems: list[Problem]) -> Optional[dict[str, Any]]:
    """The JSON object of one line, or None with its problem added (nested too deep, not JSON, a number too long
    for Python's int, not an object)."""
    if _too_deep(text):
        problems.append(Problem(where, text[:60], f"nests deeper than {MAX_DEPTH} levels",
                                "write the workload's fields as the schema has them "
                                "(schema/demand-trace.schema.json)"))
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0]
        problems.append(Problem(where, text[:60], f"not JSON ({reason})", "write one JSON object per line"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem(where, text[:60], f"is a JSON {type(data).__name__.replace('dict', 'object')}, not "
                                "an object", 'write one JSON object per line: {"name": ..., "submitSeconds": ..., '
                                '"namespace": ..., "localQueue": ..., "requests": {...}}'))
        return None
    return data


def _validation_problems(err: ValidationError, where: str) -> list[Problem]:
    """One Problem per pydantic error of a line: `where key`, the value, the rule, the fix."""
    out = []
    for item in err.errors():
        loc = [str(p) for p in item["loc"][1:]] if item["loc"] and item["loc"][0] in (
            "trace", "workload") else [str(p) for p in item["loc"]]
        key = ".".join(loc) or "(line)"
        out.append(Problem(f"{where} {key}", item.get("input", "<absent>") if item["type"] != "missing"
                           else "<absent>",
                           item["msg"].replace("Value error, ", "").split(" Fix: ")[0].rstrip("."),
                           item["msg"].split(" Fix: ")[1] if " Fix: " in item["msg"]
                           else "correct the value (schema/demand-trace.schema.json)"))
    return out


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
    """`python -m kueue_cohorts.whatif.trace [--write]`: check (exit 1 when stale) or write
    schema/demand-trace.schema.json."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--write"]:
        SCHEMA_PATH.write_text(schema_text())
        return 0
    if SCHEMA_PATH.exists() and SCHEMA_PATH.read_text() == schema_text():
        return 0
    print(f"{SCHEMA_PATH} is stale: run python -m kueue_cohorts.whatif.trace --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
