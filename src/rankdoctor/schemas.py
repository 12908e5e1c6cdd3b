"""The JSON documents rankdoctor prints, as typed models: `rankdoctor schema NAME` prints
their JSON Schema, and the tests validate every output against them.

- rankdoctor.diagnosis/v1: `rankdoctor diagnose --format json` (Diagnosis.to_json)
- rankdoctor.fr/v1: `rankdoctor fr --format json` (FRReport.to_json)
- rankdoctor.stacks/v1: `rankdoctor stacks --format json`
- rankdoctor.incident/v1: a line of `rankdoctor history export` (and what `import` reads)
- rankdoctor.compare/v1: `rankdoctor compare A B --format json`
- rankdoctor.redact/v1: `rankdoctor redact --format json`
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, with_config
from typing_extensions import NotRequired, TypedDict

from .kb.taxonomy import CLASS_IDS

_CLOSED = ConfigDict(extra="forbid")
Rank = Annotated[int, Field(ge=0)]
FailureClass = Literal[tuple(sorted(CLASS_IDS))]  # type: ignore[valid-type]


@with_config(_CLOSED)
class EvidenceDoc(TypedDict):
    source: str
    line: Annotated[int, Field(ge=0, description="1-based line in the source; 0 when the line is not known")]
    rank: Rank | None
    time: str | None
    text: str
    signature: str
    role: str


@with_config(_CLOSED)
class StepDoc(TypedDict):
    text: str
    command: Annotated[str | None, Field(description="null where the step is not a command")]


FindingDoc = with_config(_CLOSED)(TypedDict("FindingDoc", {
    "entry": Annotated[str, Field(description="id of the encyclopedia entry (rankdoctor kb show ID)")],
    "class": FailureClass,
    "title": str,
    "confidence": Annotated[float, Field(ge=0.0, le=1.0)],
    "initiating_rank": Rank | None,
    "initiating_ranks": list[Rank],
    "collateral_ranks": list[Rank],
    "evidence": list[EvidenceDoc],
    "root_cause": str,
    "fix": list[StepDoc],
    "verify": StepDoc,
    "missing": list[str],
}))


@with_config(_CLOSED)
class RanksDoc(TypedDict):
    count: Annotated[int, Field(ge=0)]
    seen: list[Rank]


@with_config(_CLOSED)
class InputDoc(TypedDict):
    path: str
    bytes: Annotated[int, Field(ge=0)]
    lines: Annotated[int, Field(ge=0)]


SimilarIncidentDoc = with_config(_CLOSED)(TypedDict("SimilarIncidentDoc", {
    "id": Annotated[int | None, Field(description="the incident's number in this history (rankdoctor history show ID)")],
    "uid": str,
    "saved_at": str,
    "job": str,
    "entry": str | None,
    "class": FailureClass | None,
    "initiating_ranks": list[Rank],
    "similarity": Annotated[float, Field(ge=0.0, le=1.0)],
    "shared_fingerprints": Annotated[int, Field(ge=0)],
    "fix": Annotated[str | None, Field(description="what fixed it (rankdoctor history resolve); null when not recorded")],
    "fixed_at": str | None,
}))


@with_config(_CLOSED)
class DiagnosisDoc(TypedDict):
    """rankdoctor.diagnosis/v1"""

    schema: Literal["rankdoctor.diagnosis/v1"]
    verdict: Literal["diagnosed", "inconclusive", "no-failure-found"]
    diagnoses: list[FindingDoc]  # type: ignore[valid-type]
    ranks: RanksDoc
    inputs: list[InputDoc]
    # optional, added in place (a v1 reader that ignores it reads the rest as before): the
    # local incident history's closest matches, best first; absent when no history was read
    similar_incidents: NotRequired[Annotated[list[SimilarIncidentDoc], Field(  # type: ignore[valid-type]
        description="past incidents from the local history most like this one, best first (absent when no history was consulted)")]]
    # optional, added in place: the report's notes (absent when there are none)
    notes: NotRequired[Annotated[list[str], Field(
        description="what the report says besides its findings, one sentence each: inputs skipped or cut short, "
                    "failure lines read as handled (a logged exception the program got past, a passing streak, "
                    "the job's teardown), restarts, why a hang was assumed (absent when there are none)")]]


@with_config(ConfigDict(extra="allow"))
class FRPerRankDoc(TypedDict, total=False):
    op: str | None
    sizes: Any
    dtypes: Any
    call_site: str | None


@with_config(_CLOSED)
class FRFindingDoc(TypedDict):
    kind: Literal["missing-ranks", "lagging", "stuck", "extra-collective", "type-mismatch", "size-mismatch", "dtype-mismatch"]
    process_group: str
    seq: int | None
    op: str | None
    culprit_ranks: list[Rank]
    detail: str
    per_rank: dict[str, FRPerRankDoc]


@with_config(_CLOSED)
class FRDoc(TypedDict):
    """rankdoctor.fr/v1"""

    schema: Literal["rankdoctor.fr/v1"]
    verdict: Literal["mismatch", "hang", "consistent", "inconclusive"]
    ranks_found: list[Rank]
    ranks_missing: list[Rank]
    findings: list[FRFindingDoc]


@with_config(_CLOSED)
class StackGroupDoc(TypedDict):
    ranks: list[Rank]
    unranked_dumps: list[str]
    frames: list[str]
    odd: bool


@with_config(_CLOSED)
class StacksDoc(TypedDict):
    """rankdoctor.stacks/v1"""

    schema: Literal["rankdoctor.stacks/v1"]
    dumps: Annotated[int, Field(ge=0)]
    groups: list[StackGroupDoc]
    skipped: list[str]


Verdict = Literal["diagnosed", "inconclusive", "no-failure-found"]

# what a saved incident and each side of a comparison say of their run's outcome
_OUTCOME = {
    "verdict": Verdict,
    "entry": str | None,
    "class": FailureClass | None,
    "initiating_ranks": list[Rank],
    "collateral_ranks": list[Rank],
    "world_size": Annotated[int, Field(ge=0)],
}

IncidentDoc = with_config(_CLOSED)(TypedDict("IncidentDoc", {
    "schema": Literal["rankdoctor.incident/v1"],
    "uid": Annotated[str, Field(min_length=1, description="the same incident keeps its uid in every history it is imported into")],
    "saved_at": str,
    "job": str,
    **_OUTCOME,
    "fingerprints": list[str],
    "fix": str | None,
    "fixed_at": str | None,
    "report": DiagnosisDoc,
}))
IncidentDoc.__doc__ = "rankdoctor.incident/v1: one line of `rankdoctor history export`"

CompareSideDoc = with_config(_CLOSED)(TypedDict("CompareSideDoc", {
    "label": str,
    "incident": int | None,
    "job": str | None,
    **_OUTCOME,
}))


@with_config(_CLOSED)
class FingerprintDiffDoc(TypedDict):
    only_a: list[str]
    only_b: list[str]
    shared: list[str]


@with_config(_CLOSED)
class RankChangeDoc(TypedDict):
    rank: Rank
    a: Literal["initiating", "collateral", "-"]
    b: Literal["initiating", "collateral", "-"]


@with_config(_CLOSED)
class CompareDoc(TypedDict):
    """rankdoctor.compare/v1"""

    schema: Literal["rankdoctor.compare/v1"]
    same_failure: Annotated[bool, Field(description="the same top entry, and evidence at least 0.5 alike")]
    same_entry: bool
    same_class: bool
    similarity: Annotated[float, Field(ge=0.0, le=1.0, description="Jaccard of the two fingerprint sets")]
    a: CompareSideDoc  # type: ignore[valid-type]
    b: CompareSideDoc  # type: ignore[valid-type]
    fingerprints: FingerprintDiffDoc
    rank_changes: list[RankChangeDoc]



@with_config(_CLOSED)
class RedactDoc(TypedDict):
    """rankdoctor.redact/v1"""

    schema: Literal["rankdoctor.redact/v1"]
    output: str
    written: Annotated[list[str], Field(description="the redacted copies, under output")]
    skipped: Annotated[list[str], Field(description="inputs not copied, each with why (binary data, unreadable)")]
    replaced: Annotated[dict[str, Annotated[int, Field(ge=0)]], Field(description="replacements made, by kind (host, ipv4, hf-token, ...)")]




DOCUMENTS: dict[str, Any] = {"diagnosis": DiagnosisDoc, "fr": FRDoc, "stacks": StacksDoc, "incident": IncidentDoc,
                             "compare": CompareDoc, "redact": RedactDoc}


def adapter(name: str) -> TypeAdapter:
    return TypeAdapter(DOCUMENTS[name])


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one document."""
    schema = adapter(name).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"rankdoctor.{name}/v1"
    return schema


def validate(name: str, doc: Any) -> None:
    """Raise pydantic.ValidationError when ``doc`` is not a valid document of that name."""
    adapter(name).validate_python(doc, strict=True)
