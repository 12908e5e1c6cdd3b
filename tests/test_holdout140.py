"""Readings learned from held-out set EF (tests/scenarios/real-holdout140: logs people committed to
public repositories, measured before any change): torch 1.x's TCPStore connect timeout as it was
printed before the timeout was appended ("RuntimeError: connect() timed out."), here on every task
of a habitat DD-PPO job under srun, is a rendezvous failure, not one task's crash."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS

EF = SCENARIOS / "real-holdout140"


def test_the_old_store_connect_timeout_is_a_rendezvous_failure():
    d = rankdoctor.diagnose(EF / "p4-habitat-ddppo-tcpstore-connect-timeout" / "log.txt")
    assert d.diagnoses[0].klass == "rendezvous-init", [(x.entry, x.confidence) for x in d.diagnoses]
    kb = load_kb()

    def fired(text: str) -> bool:
        return any(e.entry == "tcpstore-connect-failed" for e in iter_events(scan_text(kb, text)))

    assert fired("RuntimeError: connect() timed out.\n")
    assert fired("RuntimeError: connect() timed out. Original timeout was 60000 ms.\n")
    # the words inside another message are not the store's timeout
    assert not fired("socket connect() timed out. retrying in 5 s (attempt 2 of 10)\n")
