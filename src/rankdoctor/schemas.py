"""The JSON documents rankdoctor prints, as typed models: `rankdoctor schema NAME` prints
their JSON Schema, and the tests validate every output against them.

- rankdoctor.diagnosis/v1: `rankdoctor diagnose --format json` (Diagnosis.to_json)
- rankdoctor.fr/v1: `rankdoctor fr --format json` (FRReport.to_json)
- rankdoctor.stacks/v1: `rankdoctor stacks --format json`
- rankdoctor.redact/v1: `rankdoctor redact --format json`
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, with_config
from typing_extensions import TypedDict

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


@with_config(_CLOSED)
class DiagnosisDoc(TypedDict):
    """rankdoctor.diagnosis/v1"""

    schema: Literal["rankdoctor.diagnosis/v1"]
    verdict: Literal["diagnosed", "inconclusive", "no-failure-found"]
    diagnoses: list[FindingDoc]  # type: ignore[valid-type]
    ranks: RanksDoc
    inputs: list[InputDoc]


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


@with_config(_CLOSED)
class RedactDoc(TypedDict):
    """rankdoctor.redact/v1"""

    schema: Literal["rankdoctor.redact/v1"]
    output: str
    written: Annotated[list[str], Field(description="the redacted copies, under output")]
    skipped: Annotated[list[str], Field(description="inputs not copied, each with why (binary data, unreadable)")]
    replaced: Annotated[dict[str, Annotated[int, Field(ge=0)]], Field(description="replacements made, by kind (host, ipv4, hf-token, ...)")]


DOCUMENTS: dict[str, Any] = {"diagnosis": DiagnosisDoc, "fr": FRDoc, "stacks": StacksDoc, "redact": RedactDoc}


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
