"""Render the encyclopedia to static HTML (no external assets, works from file://).

The output folder may already hold files, and links planted there: every file is written
as a new file renamed over its path, so a link (or a hard link) at that path is replaced,
never written through, and a link where a folder goes is replaced by the folder. An output
folder that is itself a link is refused."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from ..kb.loader import KnowledgeBase
from ..kb.model import Entry
from ..kb.taxonomy import CLASSES

HERE = Path(__file__).parent
_ENV_VAR = re.compile(r"\b(?:TORCH_NCCL|TORCH_FR|TORCH_DISTRIBUTED|TORCHELASTIC|NCCL|CUDA|PYTORCH_CUDA|TORCH)_[A-Z0-9_]+\b")
_NCCL_KEYS = ("NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "TORCH_NCCL_", "TORCH_FR_")


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("rankdoctor.site", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["squash"] = lambda s: " ".join(str(s).split())
    env.filters["ticks"] = _ticks
    env.filters["links"] = _links
    env.filters["untick"] = lambda s: re.sub(r"`([^`]+)`", r"\1", " ".join(str(s).split()))
    return env


def _ticks(text: str) -> Markup:
    """Escape prose, then show `backticked` spans as inline code."""
    safe = str(escape(" ".join(str(text).split())))
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", safe))


# An http(s) URL inside a line of prose; quotes, brackets and backticks end it, so the
# link stays inside its attribute and a parenthesised URL loses its closing bracket.
_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}`]+")


def _links(text: str) -> Markup:
    """Escape a line (an example's source) and make each http(s) URL in it a link; no
    other scheme is ever a link."""
    text = " ".join(str(text).split())
    parts: list[Markup] = []
    last = 0
    for m in _URL.finditer(text):
        url = m.group(0).rstrip(".,;:")
        parts.append(escape(text[last : m.start()]))
        parts.append(Markup('<a href="{0}" rel="noreferrer">{0}</a>').format(url))
        last = m.start() + len(url)
    parts.append(escape(text[last:]))
    return Markup("").join(parts)


def js_regex(rx: str) -> str:
    """Python named groups in the syntax JavaScript reads."""
    return re.sub(r"\(\?P<", "(?<", rx)


def env_vars(entry: Entry) -> list[str]:
    text = " ".join(
        [entry.verify]
        + [s.text + " " + (s.command or "") for s in (*entry.confirm, *entry.fix)]
        + ([entry.missing.command] if entry.missing else [])
        + [c.code for c in entry.code]
        + list(entry.prevention)
    )
    return sorted(set(_ENV_VAR.findall(text)))


@dataclass
class ResultCode:
    code: int
    name: str
    text: str
    meaning: str
    entries: list[Entry]


def nccl_results(kb: KnowledgeBase) -> list[ResultCode]:
    rows = yaml.safe_load((HERE / "nccl_results.yaml").read_text(encoding="utf-8"))
    out = []
    for r in rows:
        needle = r["text"].lower()
        hits = [
            e
            for e in kb
            if any(needle in x.text.lower() for x in e.examples.match) or needle in " ".join(e.observe).lower()
        ]
        out.append(ResultCode(r["code"], r["name"], r["text"], r["meaning"], sorted(hits, key=lambda e: e.id)))
    return out


class SiteError(Exception):
    """The site cannot be written where asked; the message is one line."""


def _folder(path: Path) -> None:
    """``path`` as a real folder: a link there (to a folder elsewhere, or to nothing) is
    removed first, so nothing is written into the link's target."""
    if path.is_symlink():
        path.unlink()
    path.mkdir(exist_ok=True)


def _write(path: Path, data: bytes) -> None:
    """Write ``path`` as a new file: a temporary file beside it, renamed over it (a link
    or a hard link already at that path is replaced, its target left as it is)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would create it (mkstemp makes it private)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_site(kb: KnowledgeBase, out: Path) -> list[Path]:
    """Write the site into ``out``; return the files written. Raises SiteError when
    ``out`` is a link or not a folder."""
    if out.is_symlink():
        raise SiteError(f"{out}: a link (to {os.readlink(out)}); the site is not written through links, name a real folder")
    if out.exists() and not out.is_dir():
        raise SiteError(f"{out}: not a directory")
    env = _env()
    out.mkdir(parents=True, exist_ok=True)
    _folder(out / "entries")
    written: list[Path] = []
    entries = sorted(kb, key=lambda e: e.id)
    by_class: dict[str, list[Entry]] = defaultdict(list)
    by_system: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_class[e.class_].append(e)
        for s in e.systems:
            by_system[s].append(e)
    common = {"classes": CLASSES, "n_entries": len(entries)}

    def write(rel: str, template: str, root: str, **ctx) -> None:
        p = out / rel
        _write(p, env.get_template(template).render(root=root, **common, **ctx).encode("utf-8"))
        written.append(p)

    write("index.html", "index.html", "", by_class=by_class, by_system=dict(sorted(by_system.items())))
    for e in entries:
        related = [kb.get(r) for r in sorted(kb.related_to(e.id)) if r in kb]
        write(f"entries/{e.id}.html", "entry.html", "../", e=e, related=related, env_vars=env_vars(e))
    nccl = [e for e in entries if "nccl" in e.systems]
    env_index: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        for v in env_vars(e):
            if v.startswith(("NCCL_", "TORCH_NCCL_", "TORCH_FR_", "TORCH_DISTRIBUTED_")):
                env_index[v].append(e)
    last_error = [
        (e, x.text)
        for e in nccl
        for x in e.examples.match
        if "Last error" in x.text or "NCCL WARN" in x.text
    ]
    write(
        "nccl.html",
        "nccl.html",
        "",
        results=nccl_results(kb),
        nccl=nccl,
        env_index=dict(sorted(env_index.items())),
        last_error=last_error,
    )
    index = [
        {
            "id": e.id,
            "title": e.title,
            "class": e.class_,
            "systems": e.systems,
            "tags": e.tags,
            "summary": " ".join(e.summary.split()),
            # what the log lines of this failure say, so a partial paste still finds it
            "lines": " ".join(x.text for x in e.examples.match)[:4000],
            "signatures": [{"re": js_regex(s.regex), "i": s.ignore_case} for s in e.signatures],
        }
        for e in entries
    ]
    p = out / "search-index.js"
    _write(p, ("window.RANKDOCTOR_INDEX = " + json.dumps(index, ensure_ascii=False, sort_keys=True) + ";\n").encode("utf-8"))
    written.append(p)
    for asset in sorted((HERE / "static").iterdir()):
        _write(out / asset.name, asset.read_bytes())
        written.append(out / asset.name)
    return written
