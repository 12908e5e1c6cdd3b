"""Sample logs, one click away: the scenario corpus when this is a checkout, else the
small packaged copy in ``samples/`` (real logs; see samples/SOURCES.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[2] / "tests" / "scenarios"  # src/rankdoctor/web -> repo root
PACKAGED = HERE / "samples"
MAX_SAMPLE_BYTES = 8 << 20


@dataclass
class Sample:
    id: str
    title: str
    kind: str  # real (issue-thread log) | lab (real torchrun run)
    origin: str
    files: list[tuple[str, Path]]  # (name shown in the report, path)

    def summary(self) -> dict:
        return {"id": self.id, "title": self.title, "kind": self.kind, "origin": self.origin, "files": [n for n, _ in self.files]}


def _yaml(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _case(d: Path) -> Sample | None:
    if (d / "log.txt").is_file():
        meta = _yaml(d / "case.yaml")
        title = str(meta.get("title") or d.name)
        origin = str(meta.get("source") or "public issue thread")
        return Sample(d.name, " ".join(title.split()), "real", origin, [(f"{d.name}/log.txt", d / "log.txt")])
    if (d / "console.log").is_file():
        meta = _yaml(d / "expected.yaml")
        title = str(meta.get("description") or d.name)
        return Sample(d.name, " ".join(title.split()), "lab", "rankdoctor lab: a real torchrun + gloo run", [(f"{d.name}/console.log", d / "console.log")])
    return None


def find_samples(roots: list[Path] | None = None) -> dict[str, Sample]:
    if roots is None:
        roots = [CHECKOUT / "real", CHECKOUT / "lab"] if CHECKOUT.is_dir() else [PACKAGED]
    out: dict[str, Sample] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for d in sorted(p for p in root.iterdir() if p.is_dir()):
            s = _case(d)
            if s and s.id not in out and sum(p.stat().st_size for _, p in s.files) <= MAX_SAMPLE_BYTES:
                out[s.id] = s
    return out
