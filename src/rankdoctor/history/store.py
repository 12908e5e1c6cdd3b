"""The incident history: one SQLite file in the user's data folder (platformdirs), one row
per saved diagnosis.

Where it is: ``--db PATH``, else ``$RANKDOCTOR_HOME/history.sqlite3``, else
``<user data dir>/rankdoctor/history.sqlite3`` (~/.local/share/rankdoctor on Linux). Reading
never creates it: a report looks for similar incidents only once something was saved.
Every error (a file that is not a database, a folder that cannot be written) is a
HistoryError with a one-line message."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .fingerprints import fingerprints

DB_NAME = "history.sqlite3"
INCIDENT_SCHEMA = "rankdoctor.incident/v1"  # one line of `history export`
_VERSION = 1  # PRAGMA user_version of the tables below

_TABLES = """
CREATE TABLE IF NOT EXISTS incidents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uid TEXT NOT NULL UNIQUE,           -- kept by export/import: the same incident is one row
    saved_at TEXT NOT NULL,             -- ISO 8601, UTC
    job TEXT NOT NULL,
    verdict TEXT NOT NULL,
    entry TEXT,                         -- the top finding's entry and class (NULL: none)
    class TEXT,
    initiating_ranks TEXT NOT NULL,     -- JSON lists
    collateral_ranks TEXT NOT NULL,
    world_size INTEGER NOT NULL,
    fingerprints TEXT NOT NULL,         -- JSON list of templated evidence lines
    fingerprint_count INTEGER NOT NULL,
    report TEXT NOT NULL,               -- the rankdoctor.diagnosis/v1 document
    fix TEXT,                           -- what fixed it (history resolve)
    fixed_at TEXT
);
CREATE INDEX IF NOT EXISTS incidents_entry ON incidents(entry);
-- the fingerprints again, one a row: a lookup counts the ones an incident shares with a
-- report in the index instead of reading every incident's list
CREATE TABLE IF NOT EXISTS fingerprints (
    incident INTEGER NOT NULL REFERENCES incidents(id),
    fp TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS fingerprints_fp ON fingerprints(fp);
"""


class HistoryError(Exception):
    """The history cannot be read or written; the message is one line."""


class NoIncident(HistoryError):
    """No incident has that number."""


def default_path() -> Path:
    home = os.environ.get("RANKDOCTOR_HOME")
    if home:
        return Path(home) / DB_NAME
    from platformdirs import user_data_path

    return user_data_path("rankdoctor", appauthor=False) / DB_NAME


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Incident:
    uid: str
    saved_at: str
    job: str
    verdict: str
    entry: str | None
    klass: str | None
    initiating_ranks: list[int]
    collateral_ranks: list[int]
    world_size: int
    fingerprints: list[str]
    report: dict[str, Any]
    fix: str | None = None
    fixed_at: str | None = None
    id: int | None = None  # this database's row id (not exported: another history numbers its own)

    @classmethod
    def from_report(cls, report: dict[str, Any], job: str, saved_at: str | None = None) -> "Incident":
        top = (report.get("diagnoses") or [None])[0] or {}
        return cls(
            uid=uuid.uuid4().hex,
            saved_at=saved_at or now(),
            job=job,
            verdict=report["verdict"],
            entry=top.get("entry"),
            klass=top.get("class"),
            initiating_ranks=list(top.get("initiating_ranks") or []),
            collateral_ranks=list(top.get("collateral_ranks") or []),
            world_size=int((report.get("ranks") or {}).get("count") or 0),
            fingerprints=fingerprints(report),
            report=report,
        )

    def to_json(self) -> dict[str, Any]:
        """One line of `history export` (rankdoctor.incident/v1)."""
        return {
            "schema": INCIDENT_SCHEMA, "uid": self.uid, "saved_at": self.saved_at, "job": self.job,
            "verdict": self.verdict, "entry": self.entry, "class": self.klass,
            "initiating_ranks": self.initiating_ranks, "collateral_ranks": self.collateral_ranks,
            "world_size": self.world_size, "fingerprints": self.fingerprints,
            "fix": self.fix, "fixed_at": self.fixed_at, "report": self.report,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Incident":
        return cls(doc["uid"], doc["saved_at"], doc["job"], doc["verdict"], doc["entry"], doc["class"],
                   doc["initiating_ranks"], doc["collateral_ranks"], doc["world_size"], doc["fingerprints"],
                   doc["report"], doc["fix"], doc["fixed_at"])


_COLUMNS = ("id, uid, saved_at, job, verdict, entry, class, initiating_ranks, collateral_ranks, world_size, "
            "fingerprints, report, fix, fixed_at")


def _row(r: tuple) -> Incident:
    return Incident(
        id=r[0], uid=r[1], saved_at=r[2], job=r[3], verdict=r[4], entry=r[5], klass=r[6],
        initiating_ranks=json.loads(r[7]), collateral_ranks=json.loads(r[8]), world_size=r[9],
        fingerprints=json.loads(r[10]), report=json.loads(r[11]), fix=r[12], fixed_at=r[13],
    )


class History:
    """The incidents in one SQLite file. Each call opens and closes its own connection, so
    a History can be shared by the web app's threads and by concurrent commands."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()

    def exists(self) -> bool:
        return self.path.is_file()

    @contextmanager
    def _db(self, create: bool = False) -> Iterator[sqlite3.Connection]:
        if not create and not self.exists():
            raise NoIncident(f"{self.path}: no incident history yet (save one with rankdoctor diagnose --save)")
        try:
            if create and not self.exists():
                # the reports quote log lines (hosts, paths, at times a token): readable by
                # the user only, as an SSH key would be
                self.path.parent.mkdir(parents=True, exist_ok=True)
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            with closing(sqlite3.connect(self.path, timeout=10)) as con:
                version = con.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    con.executescript(_TABLES)
                    con.execute(f"PRAGMA user_version = {_VERSION}")
                elif version > _VERSION:
                    raise HistoryError(f"{self.path}: written by a newer rankdoctor (history version {version})")
                with con:  # one transaction: committed on success, rolled back on error
                    yield con
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"{self.path}: cannot use the incident history: {exc}") from None
        except OSError as exc:
            raise HistoryError(f"{self.path}: cannot use the incident history: {exc.strerror or exc}") from None

    def add(self, incident: Incident) -> int:
        with self._db(create=True) as con:
            return self._insert(con, incident)

    @staticmethod
    def _insert(con: sqlite3.Connection, i: Incident) -> int:
        cur = con.execute(
            f"INSERT INTO incidents ({_COLUMNS.split(', ', 1)[1]}, fingerprint_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (i.uid, i.saved_at, i.job, i.verdict, i.entry, i.klass, json.dumps(i.initiating_ranks),
             json.dumps(i.collateral_ranks), i.world_size, json.dumps(i.fingerprints),
             json.dumps(i.report, ensure_ascii=False), i.fix, i.fixed_at, len(set(i.fingerprints))),
        )
        row = int(cur.lastrowid)
        con.executemany("INSERT INTO fingerprints (incident, fp) VALUES (?, ?)", [(row, fp) for fp in sorted(set(i.fingerprints))])
        return row

    def candidates(self, fps: list[str], entry: str | None) -> list[tuple[Incident, int, int]]:
        """The incidents that share a fingerprint with ``fps`` or have the same ``entry``,
        newest first, each with the number of fingerprints shared and its own count (its
        report and fingerprint list left out); [] when there is no history yet."""
        if not self.exists():
            return []
        fps = sorted(set(fps))
        marks = ",".join("?" * len(fps))
        shared = f"SELECT incident, count(*) AS n FROM fingerprints WHERE fp IN ({marks}) GROUP BY incident" if fps else \
            "SELECT NULL AS incident, 0 AS n WHERE 0"
        columns = ", ".join(f"i.{c}" for c in _COLUMNS.split(", ")).replace("i.fingerprints", "'[]'").replace("i.report", "'{}'")
        sql = (f"SELECT {columns}, COALESCE(s.n, 0), i.fingerprint_count FROM incidents i LEFT JOIN ({shared}) s ON s.incident = i.id "
               "WHERE s.n IS NOT NULL OR i.entry = ? ORDER BY i.saved_at DESC, i.id DESC")
        with self._db() as con:
            return [(_row(r[:14]), r[14], r[15]) for r in con.execute(sql, (*fps, entry))]

    def all(self, reports: bool = True) -> list[Incident]:
        """Every incident, newest first; [] when there is no history yet. ``reports=False``
        leaves each report out ({}): a similarity lookup needs only the fingerprints, and
        parsing thousands of reports would cost it seconds."""
        if not self.exists():
            return []
        columns = _COLUMNS if reports else _COLUMNS.replace("report,", "'{}',")
        with self._db() as con:
            return [_row(r) for r in con.execute(f"SELECT {columns} FROM incidents ORDER BY saved_at DESC, id DESC")]

    def get(self, incident_id: int) -> Incident:
        with self._db() as con:
            r = con.execute(f"SELECT {_COLUMNS} FROM incidents WHERE id = ?", (incident_id,)).fetchone()
        if r is None:
            raise NoIncident(f"no incident {incident_id} in {self.path} (see rankdoctor history list)")
        return _row(r)

    def resolve(self, incident_id: int, fix: str) -> Incident:
        """Record what fixed an incident (a later resolve replaces it)."""
        fix = " ".join(fix.split())
        if not fix:
            raise HistoryError("--fix: say what fixed it")
        with self._db() as con:
            cur = con.execute("UPDATE incidents SET fix = ?, fixed_at = ? WHERE id = ?", (fix, now(), incident_id))
            if cur.rowcount == 0:
                raise NoIncident(f"no incident {incident_id} in {self.path} (see rankdoctor history list)")
        return self.get(incident_id)

    def merge(self, incidents: list[Incident]) -> tuple[int, int, int]:
        """Import: add the incidents not here yet (by uid), and take the fix of one that is
        here without a fix. All or nothing. Returns (added, fixes taken, already here)."""
        added = fixed = same = 0
        with self._db(create=True) as con:
            for i in incidents:
                r = con.execute("SELECT id, fix FROM incidents WHERE uid = ?", (i.uid,)).fetchone()
                if r is None:
                    self._insert(con, i)
                    added += 1
                elif r[1] is None and i.fix:
                    con.execute("UPDATE incidents SET fix = ?, fixed_at = ? WHERE id = ?", (i.fix, i.fixed_at, r[0]))
                    fixed += 1
                else:
                    same += 1
        return added, fixed, same
