"""The knowledge-base entry: one failure mode, as data.

An entry is a YAML file under ``entries/<area>/<id>.yaml``. The model below is the
schema; ``validate.py`` adds the checks that need the whole knowledge base (unique ids,
related ids that exist, taxonomy classes).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Named capture groups the diagnosis engine understands. A signature may use any of
# these; other names are kept as plain captures and shown in the evidence.
KNOWN_CAPTURES = {
    "rank",  # global rank the line is about (overrides the line's prefix)
    "local_rank",
    "pg_rank",  # rank inside a process group (not the global rank)
    "peer_rank",  # a rank this line accuses (e.g. "Connection closed by localRank 2")
    "peer_local_rank",
    "host",  # where the line was printed
    "peer_host",  # a host the line names as its peer or target (the store host it cannot reach)
    "at",  # the time the message gives itself (Slurm's "CANCELLED AT 2024-05-02T03:11:09"), for a line whose prefix gives none
    "pid",
    "seq",  # collective sequence number
    "op_count",  # NCCL's per-communicator op counter, hexadecimal (NCCL_DEBUG_SUBSYS=COLL)
    "op",  # collective type
    "numel_in",
    "numel_out",
    "timeout_ms",
    "elapsed_ms",
    "last_enqueued",
    "last_completed",
    "exitcode",
    "signal",
    "world_size",
    "device",
    "value",  # a measured value (loss, memory...)
    "ranks_missing",  # comma-separated ranks a report says never joined an op (Horovod's stall report)
    "ranks_ready",  # comma-separated ranks a report says did join it
}


class Role(str, Enum):
    """What a signature's line says about the failure.

    cause: the line is the failure itself on the rank that printed it (an exception, an
    OOM, an assert). symptom: the line is what a rank sees when something else failed (a
    timeout, a connection reset, a SIGTERM from the launcher). context: the line does not
    show a failure, but makes one explanation more likely (a recompile, a progress bar).
    """

    cause = "cause"
    symptom = "symptom"
    context = "context"


class Severity(str, Enum):
    critical = "critical"
    high = "high"
    medium = "medium"
    low = "low"


class Scope(str, Enum):
    """Where a failure of this kind starts.

    rank: on one rank (an OOM, a dead GPU): the rank that shows it is the initiating rank.
    job: every rank runs the same code and fails the same way (a bad model definition, a
    compile error): the rank that happened to print it is not "the" initiating rank.
    """

    rank = "rank"
    job = "job"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Signature(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    role: Role
    regex: str
    ignore_case: bool = False
    weight: float = Field(default=1.0, gt=0.0, le=1.0, description="how strongly one hit supports the entry")
    repeat_cause: int | None = Field(
        default=None,
        ge=2,
        description="a context/symptom line that becomes a cause when it repeats this many times (e.g. overflow skips every step)",
    )
    reports_peer: bool = Field(
        default=False,
        description=(
            "the line is the printing rank's report about an unnamed peer (gloo's size check "
            "'op.preamble.length <= op.nbytes. X vs Y': the peer sent X for an op that expects Y; "
            "'Connection closed by peer [addr]'): in a two-rank job the peer is the other rank, "
            "which the line then names as the other side"
        ),
    )
    ring_sender: bool = Field(
        default=False,
        description=(
            "(with reports_peer) the line reports data a peer sent in a ring all_reduce, where each rank "
            "receives from the next one (gloo's ring: rank r receives from rank r+1 and sends to r-1): the "
            "next rank is the sender when its own traceback stops in all_reduce"
        ),
    )
    computed: Literal["loss-jump", "loss-scale-collapse", "nonfinite-grad-loss-jump", "rank-claimed-twice", "rank-beyond-world", "waits-beyond-world", "gpu-shared-by-processes"] | None = Field(
        default=None,
        description=(
            "the engine finds where this signature holds by reading across lines instead of matching the "
            "regex line by line: a run's numbers (trajectory.py: a loss jump, a loss-scale collapse, a non-finite "
            "gradient norm with a loss jump) or the "
            "ranks the processes announce (claims.py: one rank announced twice while others never are), the "
            "ranks they wait for at init (claims.py: a rank no other process waits for or shows) or "
            "nvidia-smi's process table (claims.py: one GPU holding several processes of one program); the "
            "regex is the shape of the line it reads, and the examples are excerpts of several lines"
        ),
    )
    names_culprit: bool = Field(
        default=False,
        description=(
            "the line is a verdict that compared every rank's collective history and names, in its rank "
            "capture, the rank(s) where the ranks first diverged (rankdoctor guard's desync line): not the "
            "printing rank's own failure nor a witness's report"
        ),
    )
    resets_repeats: bool = Field(
        default=False,
        description=(
            "the line says the condition that the entry's repeat_cause lines count has gone away (a "
            "dynamic loss scaler raising its scale again after a window of clean steps): in its source, "
            "only the occurrences after the last such line count toward a repeat_cause threshold"
        ),
    )
    stop: bool = Field(
        default=False,
        description=(
            "the line says the job was ended from outside - a scheduler's time limit, a launcher's death "
            "signal, a person's Ctrl-C - and not that anything in it failed: whether the job had stopped "
            "making progress before (a hang the stop ended) is for the other lines to show"
        ),
    )
    description: str = ""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            compiled = re.compile(v)
        except re.error as exc:
            raise ValueError(f"regex does not compile: {exc}") from exc
        if v.startswith("^"):
            raise ValueError(
                "regex must not be anchored with '^': signatures match anywhere in a line, "
                "because rank/host/time prefixes vary"
            )
        if compiled.search(""):
            raise ValueError("regex matches the empty string")
        return v

    @model_validator(mode="after")
    def _ring_needs_peer(self) -> "Signature":
        if self.ring_sender and not self.reports_peer:
            raise ValueError("ring_sender describes the peer a line reports on: it needs reports_peer: true")
        return self


class Step(_Strict):
    """A checklist item: what to do, and optionally the command that does it."""

    text: str = Field(min_length=1)
    command: str | None = None


class Reference(_Strict):
    title: str = Field(min_length=1)
    url: str = Field(pattern=r"^https?://[^\s/$.?#].[^\s]*$")


class CodeExample(_Strict):
    title: str = Field(min_length=1)
    system: str = Field(min_length=1)
    language: str = "python"
    code: str = Field(min_length=1)


class Example(_Strict):
    text: str = Field(min_length=1)
    source: str = Field(min_length=1, description="where the line comes from: the public thread (owner/repo#N (url)), upstream code, or lab run; never a local path")

    @field_validator("text")
    @classmethod
    def _no_trailing_newline(cls, v: str) -> str:
        return v.rstrip("\n")


class Examples(_Strict):
    match: list[Example] = Field(min_length=1)
    no_match: list[Example] = Field(min_length=1)


class MissingFact(_Strict):
    """The one fact to collect next when only this entry's symptoms were seen."""

    fact: str = Field(min_length=1)
    command: str = Field(min_length=1)


class Explains(str, Enum):
    """Cross-rank findings (computed by the engine) that this entry can explain."""

    desync = "desync"  # ranks stuck at different collectives
    straggler = "straggler"  # every reporting rank waits at one collective; a rank is absent
    dead_peer = "dead-peer"  # peers report a connection to a rank closed / reset
    first_collective = "first-collective"  # the ranks time out in the job's first collective: no data ever moved
    p2p_wait = "p2p-wait"  # stack dumps show ranks blocked in send/recv on each other (a cycle of waits)


class Fallback(str, Enum):
    """What the engine found that this entry is proposed for even when none of its own
    lines fired: the generic explanation of a cross-rank finding, or of a failure line no
    entry names (one entry each)."""

    desync = "desync"
    straggler = "straggler"
    dead_peer = "dead-peer"
    first_collective = "first-collective"
    p2p_wait = "p2p-wait"
    exception = "exception"  # a Python exception no entry names
    abort = "abort"  # a C++ exception or abort no entry names
    nccl_warn = "nccl-warn"  # a NCCL WARN line no other entry names (the fallback entry's own signature finds them)
    exit = "exit"  # a rank that died (non-zero exit, signal) with no line of its own


class Entry(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*[a-z0-9]$")
    title: str = Field(min_length=3)
    class_: str = Field(alias="class", min_length=1)
    severity: Severity
    status: Literal["stable", "experimental"] = "stable"
    scope: Scope = Scope.rank
    tags: list[str] = Field(default_factory=list)
    systems: list[str] = Field(min_length=1)
    summary: str = Field(min_length=10)
    mechanism: str = Field(min_length=10)
    misdiagnosis: str = Field(min_length=10)
    observe: list[str] = Field(min_length=1)
    signatures: list[Signature] = Field(min_length=1)
    explains: list[Explains] = Field(default_factory=list)
    fallback_for: list[Fallback] = Field(default_factory=list)
    traceback_frames: list[str] = Field(
        default_factory=list,
        description=(
            "regexes on traceback frame lines ('File \"path\", line N, in func'): an exception no "
            "entry names, whose traceback passes through a matching frame, is proposed for this "
            "entry - the generic explanation of failures in one subsystem (FSDP, checkpointing, ...)"
        ),
    )
    activity_lines: list[str] = Field(
        default_factory=list,
        description=(
            "regexes on a rank's own last line of work before an exception no entry names (what "
            "the program said it was doing: 'Saving model checkpoint to ...'): that exception is "
            "proposed for this entry too, as with traceback_frames"
        ),
    )
    confirm: list[Step] = Field(min_length=1)
    fix: list[Step] = Field(min_length=1)
    prevention: list[str] = Field(min_length=1)
    verify: str = Field(min_length=1)
    missing: MissingFact | None = None
    related: list[str] = Field(default_factory=list)
    references: list[Reference] = Field(min_length=1)
    code: list[CodeExample] = Field(min_length=1)
    examples: Examples
    todo: list[str] = Field(default_factory=list, description="known gaps, written down")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    @property
    def klass(self) -> str:
        return self.class_

    @property
    def catch_all(self) -> bool:
        """Its signature finds a whole kind of line (every NCCL WARN line, ``fallback_for:
        [nccl-warn]``): a line another entry also names is that entry's."""
        return Fallback.nccl_warn in self.fallback_for

    @model_validator(mode="after")
    def _signature_ids_unique(self) -> "Entry":
        ids = [s.id for s in self.signatures]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate signature ids: {sorted(dupes)}")
        if self.id in self.related:
            raise ValueError("an entry cannot be related to itself")
        # an example is one log line, except for an entry read from a run's numbers across
        # lines (a computed signature): its examples are excerpts of several lines
        if not any(s.computed for s in self.signatures):
            for ex in (*self.examples.match, *self.examples.no_match):
                if "\n" in ex.text:
                    raise ValueError("an example is one log line")
        return self

    def signature(self, sig_id: str) -> Signature:
        for s in self.signatures:
            if s.id == sig_id:
                return s
        raise KeyError(sig_id)


    @field_validator("traceback_frames", "activity_lines")
    @classmethod
    def _frames_compile(cls, v: list[str]) -> list[str]:
        for rx in v:
            try:
                re.compile(rx)
            except re.error as exc:
                raise ValueError(f"regex does not compile: {rx!r}: {exc}") from exc
        return v