"""What ``rankdoctor watch`` does when the diagnosis changes: post it to a webhook
(``--alert-webhook URL``) and run a command (``--on-diagnosis CMD``).

An alert is sent when the diagnosis changes in what a person acts on: its verdict, entry,
class or initiating ranks (a new confidence or more evidence for the same answer is not a
new alert), and when the set of silent ranks or the stall changes. Two alerts can be
firing at once, each with its own start: ``RankdoctorDiagnosis`` (while the verdict is
diagnosed or inconclusive) and ``RankdoctorRankSilent`` (while ranks are silent;
``RankdoctorRunStalled`` while every rank is); one that stops is posted once more as resolved. The command runs on the same
changes of the diagnosis, and when ranks go silent (or the run stalls).

One JSON body serves both kinds of receivers: the fields of Alertmanager's webhook
payload (``version`` "4", ``groupKey``, ``truncatedAlerts``, ``status`` firing/resolved,
``receiver``, ``groupLabels``, ``commonLabels``, ``commonAnnotations``, ``externalURL``,
``alerts`` with ``status``, ``labels``, ``annotations``, ``startsAt``, ``endsAt``,
``generatorURL``, ``fingerprint``), so whatever reads Alertmanager's webhooks reads it, and
a top-level ``text`` that Slack-compatible incoming webhooks show.

Posts go out from one thread, in order, so the watch never waits on a receiver: a failed
post (no connection, a timeout, HTTP 408, 429 or 5xx) is tried again after 1, 2, 4, 8 s
(``ATTEMPTS`` in all), then given up with a line on stderr; other 4xx answers are not
tried again (the receiver refuses the body). The command runs from another thread, one at
a time, its output on stderr (stdout stays the watch's), with the diagnosis in
environment variables and a JSON file.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ..kb.loader import KnowledgeBase
    from .core import Update

ATTEMPTS = 5  # a post is tried this many times in all
BACKOFF = 1.0  # seconds before the second try; doubled each time (1, 2, 4, 8)
BACKOFF_MAX = 30.0
POST_TIMEOUT = 10.0  # seconds for one HTTP request
QUEUE_MAX = 100  # posts waiting while a receiver is down; the oldest is dropped past this
COMMAND_TIMEOUT = 600.0  # seconds an --on-diagnosis command may run
NEVER = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt of an alert still firing
RETRY_STATUS = {408, 425, 429}


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ranks(rs) -> str:
    from ..diagnose.collectives import compress_ranks

    return compress_ranks(rs) if rs else ""


def diagnosis_key(doc: dict[str, Any]) -> tuple:
    """What an alert is about: verdict, entry, class and initiating ranks of the first diagnosis."""
    top = doc["diagnoses"][0] if doc["diagnoses"] else None
    if top is None:
        return (doc["verdict"], None, None, ())
    return (doc["verdict"], top["entry"], top["class"], tuple(top["initiating_ranks"]))


def silence_key(u: "Update") -> tuple:
    return (tuple(sorted(u.silent)), u.stalled)


class _Alert:
    """One alert's identity and state, as Alertmanager would hold it."""

    def __init__(self, labels: dict[str, str], annotations: dict[str, str], starts: float):
        self.labels, self.annotations, self.starts = labels, annotations, starts
        self.ends: float | None = None

    @property
    def fingerprint(self) -> str:
        text = "\x00".join(f"{k}\x00{v}" for k, v in sorted(self.labels.items()))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "firing" if self.ends is None else "resolved",
            "labels": self.labels,
            "annotations": self.annotations,
            "startsAt": _rfc3339(self.starts),
            "endsAt": NEVER if self.ends is None else _rfc3339(self.ends),
            "generatorURL": "",
            "fingerprint": self.fingerprint,
        }


class Alerts:
    """Subscribe it to a watcher (``watcher.subscribe(alerts)``); ``close()`` at the end
    waits (bounded) for the posts and the command still under way."""

    def __init__(self, paths: list[str], *, kb: "KnowledgeBase | None" = None, webhook: str | None = None,
                 command: str | None = None, err: TextIO = sys.stderr, attempts: int = ATTEMPTS, backoff: float = BACKOFF):
        self.paths = list(paths)
        self.kb = kb
        self.err = err
        self.attempts, self.backoff = attempts, backoff
        self._last_diag: tuple | None = None
        self._last_silence: tuple = ((), False)
        self._diag: _Alert | None = None
        self._silent: _Alert | None = None
        self.posted = 0  # bodies a receiver accepted
        self._posts: queue.Queue | None = None
        self._commands: queue.Queue | None = None
        self._threads: list[threading.Thread] = []
        self.webhook = webhook
        self.command = command
        self._tmp = tempfile.mkdtemp(prefix="rankdoctor-watch-") if command else None
        self._runs = 0
        if webhook:
            self._posts = queue.Queue()
            self._start(self._posts, self._post, "rankdoctor-watch-webhook")
        if command:
            self._commands = queue.Queue()
            self._start(self._commands, self._run_command, "rankdoctor-watch-command")

    def _start(self, work: queue.Queue, handle: Callable[[Any], object], name: str) -> None:
        """A thread that hands each item of ``work`` to ``handle``, until a None."""

        def drain() -> None:
            while (item := work.get()) is not None:
                handle(item)

        t = threading.Thread(target=drain, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    # -- deciding (in the watching thread) ---------------------------------------------------
    def __call__(self, u: "Update") -> None:
        doc = u.document
        dkey, skey = diagnosis_key(doc), silence_key(u)
        diag_changed = dkey != self._last_diag and not (self._last_diag is None and doc["verdict"] == "no-failure-found")
        silence_changed = skey != self._last_silence
        newly_silent = bool(set(skey[0]) - set(self._last_silence[0])) or (skey[1] and not self._last_silence[1])
        self._last_diag, self._last_silence = dkey, skey
        if not (diag_changed or silence_changed):
            return
        resolved: list[_Alert] = []
        if diag_changed:
            if self._diag is not None:
                self._diag.ends = u.at
                resolved.append(self._diag)
                self._diag = None
            if doc["verdict"] != "no-failure-found":
                self._diag = self._diagnosis_alert(u)
        if silence_changed:
            if self._silent is not None:
                self._silent.ends = u.at
                resolved.append(self._silent)
                self._silent = None
            if u.silent or u.stalled:
                self._silent = self._silence_alert(u)
        firing = [a for a in (self._diag, self._silent) if a is not None]
        new = [a for a in firing if a.starts == u.at]
        if self._posts is not None:
            self._queue_post(self.payload(u, firing, resolved, new))
        if self._commands is not None and (diag_changed or newly_silent):
            self._commands.put((u, "diagnosis" if diag_changed else "silence"))

    def _common_labels(self) -> dict[str, str]:
        return {"job": "rankdoctor-watch", "watched": " ".join(self.paths)[:200]}

    def _diagnosis_alert(self, u: "Update") -> _Alert:
        doc = u.document
        top = doc["diagnoses"][0] if doc["diagnoses"] else None
        labels = {"alertname": "RankdoctorDiagnosis", **self._common_labels(), "verdict": doc["verdict"]}
        annotations: dict[str, str] = {"summary": _headline(doc)}
        if top is not None:
            labels.update({"entry": top["entry"], "class": top["class"], "initiating_ranks": ",".join(map(str, top["initiating_ranks"]))})
            labels["severity"] = self._severity(top["entry"])
            annotations.update({
                "title": top["title"],
                "confidence": f"{top['confidence']:.2f}",
                "description": top["root_cause"] or top["title"],
                "collateral_ranks": _ranks(top["collateral_ranks"]),
            })
            if top["fix"]:
                annotations["fix"] = "\n".join(s["command"] or s["text"] for s in top["fix"][:3])
            if top["missing"]:
                annotations["missing"] = "\n".join(top["missing"])
        return _Alert(labels, annotations, u.at)

    def _severity(self, entry: str) -> str:
        """The entry's severity in the encyclopedia (critical when it is not known)."""
        if self.kb is not None and entry in self.kb:
            return self.kb.get(entry).severity.value
        return "critical"

    def _silence_alert(self, u: "Update") -> _Alert:
        labels = {"alertname": "RankdoctorRankSilent", **self._common_labels(), "severity": "high"}
        if u.stalled:
            labels["alertname"] = "RankdoctorRunStalled"
            summary = f"all {len(u.ranks)} rank(s) silent (hung, or finished)"
        else:
            summary = f"rank(s) {_ranks(u.silent)} silent while the others write"
        labels["silent_ranks"] = _ranks(u.silent)
        details = [f"rank {r}: silent {s:.0f} s, last line: {u.ranks[r].text[:200]}" for r, s in sorted(u.silent.items()) if r in u.ranks]
        return _Alert(labels, {"summary": summary, "description": "\n".join(details[:16])}, u.at)

    def payload(self, u: "Update", firing: list[_Alert], resolved: list[_Alert], new: list[_Alert]) -> dict[str, Any]:
        """The body of one post: Alertmanager's webhook payload (version 4: every alert
        firing and those just resolved, as Alertmanager sends a group) and Slack's ``text``
        (only what changed: the alerts that started and the ones resolved)."""
        alerts = [a.to_json() for a in firing + resolved]
        labels = [a["labels"] for a in alerts]
        common = {k: v for k, v in labels[0].items() if all(lab.get(k) == v for lab in labels)} if labels else {}
        annos = [a["annotations"] for a in alerts]
        common_annos = {k: v for k, v in annos[0].items() if all(an.get(k) == v for an in annos)} if annos else {}
        return {
            "version": "4",
            "groupKey": "{}:" + json.dumps({"watched": self._common_labels()["watched"]}, sort_keys=True),
            "truncatedAlerts": 0,
            "status": "firing" if firing else "resolved",
            "receiver": "rankdoctor-watch",
            "groupLabels": {"job": "rankdoctor-watch"},
            "commonLabels": common,
            "commonAnnotations": common_annos,
            "externalURL": "",
            "alerts": alerts,
            "text": self._text(new, resolved),
            "rankdoctor": {"reason": u.reason.value, "changes": u.changes, "new": [a.fingerprint for a in new],
                           "diagnosis": _brief(u.document)},
        }

    def _text(self, new: list[_Alert], resolved: list[_Alert]) -> str:
        lines = []
        for a in new:
            lines.append(f"[FIRING] {a.annotations['summary']}")
            if a.annotations.get("fix"):
                lines.append("fix: " + a.annotations["fix"].splitlines()[0])
        for a in resolved:
            lines.append(f"[RESOLVED] {a.annotations['summary']}")
        lines.append(f"rankdoctor watch {' '.join(self.paths)}"[:300])
        return "\n".join(lines)

    # -- the webhook ------------------------------------------------------------------------
    def _queue_post(self, body: dict[str, Any]) -> None:
        assert self._posts is not None
        if self._posts.qsize() >= QUEUE_MAX:
            try:
                self._posts.get_nowait()
                self._say("webhook: receiver behind; the oldest waiting alert dropped")
            except queue.Empty:
                pass
        self._posts.put(json.dumps(body, ensure_ascii=False).encode("utf-8"))

    def _post(self, data: bytes) -> bool:
        wait = self.backoff
        for attempt in range(1, self.attempts + 1):
            why = None
            req = urllib.request.Request(self.webhook, data=data, method="POST",  # type: ignore[arg-type]
                                         headers={"Content-Type": "application/json", "User-Agent": "rankdoctor-watch"})
            try:
                with urllib.request.urlopen(req, timeout=POST_TIMEOUT) as resp:
                    resp.read()
                self.posted += 1
                return True
            except urllib.error.HTTPError as exc:
                why = f"HTTP {exc.code}"
                if exc.code < 500 and exc.code not in RETRY_STATUS:
                    self._say(f"webhook: {why}: the receiver refused the alert; not tried again")
                    return False
            except (urllib.error.URLError, OSError) as exc:
                why = str(getattr(exc, "reason", exc))
            if attempt < self.attempts:
                self._say(f"webhook: {why}; trying again in {wait:g} s ({attempt}/{self.attempts})")
                time.sleep(wait)
                wait = min(wait * 2, BACKOFF_MAX)
            else:
                self._say(f"webhook: {why}; gave up after {self.attempts} attempts")
        return False

    # -- the command ------------------------------------------------------------------------
    def environment(self, u: "Update", event: str = "diagnosis") -> dict[str, str]:
        """The variables an --on-diagnosis command gets (the JSON file is written here)."""
        doc = u.document
        top = doc["diagnoses"][0] if doc["diagnoses"] else None
        self._runs += 1
        assert self._tmp is not None
        path = os.path.join(self._tmp, f"diagnosis-{self._runs}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
        return {
            "RANKDOCTOR_EVENT": event,
            "RANKDOCTOR_VERDICT": doc["verdict"],
            "RANKDOCTOR_ENTRY": top["entry"] if top else "",
            "RANKDOCTOR_CLASS": top["class"] if top else "",
            "RANKDOCTOR_RANKS": ",".join(map(str, top["initiating_ranks"])) if top else "",
            "RANKDOCTOR_COLLATERAL_RANKS": ",".join(map(str, top["collateral_ranks"])) if top else "",
            "RANKDOCTOR_CONFIDENCE": f"{top['confidence']:.2f}" if top else "",
            "RANKDOCTOR_SILENT_RANKS": ",".join(map(str, sorted(u.silent))),
            "RANKDOCTOR_JSON": path,
        }

    def _run_command(self, item: "tuple[Update, str]") -> None:
        env = {**os.environ, **self.environment(*item)}
        try:
            r = subprocess.run(self.command, shell=True, env=env, stdin=subprocess.DEVNULL, stdout=_stderr_fd(),
                               timeout=COMMAND_TIMEOUT, check=False)
            if r.returncode != 0:
                self._say(f"--on-diagnosis: the command exited with status {r.returncode}")
        except subprocess.TimeoutExpired:
            self._say(f"--on-diagnosis: the command ran past {COMMAND_TIMEOUT:g} s; stopped")
        except OSError as exc:
            self._say(f"--on-diagnosis: cannot run the command: {exc}")

    # -- the end ----------------------------------------------------------------------------
    def close(self, timeout: float = 30.0) -> None:
        """Let the waiting posts and commands finish (at most ``timeout`` s in all)."""
        for q in (self._posts, self._commands):
            if q is not None:
                q.put(None)
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                self._say(f"{t.name}: still busy after {timeout:g} s; left behind")
        if self._tmp and not any(t.is_alive() for t in self._threads):
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _say(self, msg: str) -> None:
        try:
            self.err.write(f"rankdoctor watch: {msg}\n")
            self.err.flush()
        except (OSError, ValueError):
            pass


def _stderr_fd() -> int | None:
    """The command's output goes where the watch's stderr goes (its stdout may be JSON lines)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _headline(doc: dict[str, Any]) -> str:
    from .core import _headline as headline

    return headline(doc)


def _brief(doc: dict[str, Any]) -> dict[str, Any]:
    """The diagnosis without its evidence lines (a receiver gets the answer, not the logs)."""
    out = {"schema": doc["schema"], "verdict": doc["verdict"], "ranks": doc["ranks"], "diagnoses": []}
    for d in doc["diagnoses"][:3]:
        out["diagnoses"].append({k: d[k] for k in ("entry", "class", "title", "confidence", "initiating_rank", "initiating_ranks", "collateral_ranks")})
    return out
