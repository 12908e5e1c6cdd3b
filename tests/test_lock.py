"""The regression lock: every labelled scenario keeps its result or gets better.

tests/scenarios/expected.tsv has one row per labelled scenario (real issue-thread logs,
held-out sets, lab runs, the lab fault matrix): its label, the answer the engine gave
when the row was written, and "ok" or "miss" with the reason, as semgrep marks a
``todoruleid``. A case that was right must stay right (and stay "diagnosed" if it was);
a known miss must not get worse (confidently wrong, or called healthy); a fixed miss must
be marked ok. ``make lock`` rewrites the table; its diff is the review.
"""

from __future__ import annotations

import pytest

from rankdoctor.evaluate import case_key, find_scenarios, judge, read_lock, run_case

from .conftest import SCENARIOS

LOCK = SCENARIOS / "expected.tsv"
ROWS = read_lock(LOCK)
CASES = find_scenarios([SCENARIOS])
MAX_KNOWN_MISSES = 329  # raised only with a new held-out set: Dec 3 (set V, lab-fresh4), a tie flipped by the refit; Dec 4 (set W: 3 of 19, 1 fixed before); Dec 4 (set X: 3 of 28 left as misses, one older miss fixed by the refit); Dec 4 (set Y: 4 of 27 left as misses; the refit chose lambda 0.3 over 0.1 (cross-validated confident wrong 22 against 31 of 1201) and flipped six close inconclusive answers, one older miss fixed); Dec 4 (set Z: 2 of 27 left as misses); Dec 4 (set AA: 3 of 28 left as misses, one older miss fixed by the refit); Dec 4 (set AB: 4 of 20 left as misses); Dec 4 (sets AB+AC refit: set AC 4 of 23 left as misses, two older misses fixed (a launcher record of a rank's own death now proposes that rank), one older near tie flipped); Dec 4 (set AD: 5 of 25 left as misses, and the refit with it flipped three older close answers); Dec 4 (set AE: 3 of 17 left as misses, one older near tie flipped by the refit); Dec 4 (fatal-signal and launcher-record hypotheses narrowed: one older miss fixed); Dec 4 (set AF: 8 of 31 left as misses, one older miss fixed by the refit); Dec 4 (set AG: 4 of 15 left as misses, loss spikes without a non-finite value); Dec 4 (sets AH, AI, AJ: 4 of 27, 7 of 22 and 7 of 30 left as misses, most of them tracebacks cut before their exception line; the refit with them flipped one older near tie (lightning-4420's rank) and fixed one older miss (torchrec-189)); then four loss spikes read from Megatron's iteration lines (trajectory.py) fixed; Dec 5 (set AK: 9 of 27 left as misses, most tracebacks cut before their exception line; the refit with it flipped one older near tie among low answers); Dec 5 (set AL: 14 of 29 left as misses, RPC parameter servers, Ray Train and reporters' own summaries that no line format covers); Dec 5 (set AM: 5 of 12 left as misses; the refit with it gave lightning-4420 its rank back); Dec 5 (sets AN, AO, AP, AQ: 3 of 22, 5 of 26, 8 of 30 and 6 of 25 left as misses, most of them cut tracebacks, warnings that are harmless alone and stalls with no line; two older misses fixed (duplicate GLOBAL_RANK announcements, a rank-0 unique-id wait read as rank 0 late), and the refit took lightning-4420's rank away again); Dec 5 (sets AR and AS: 3 of 25 and 8 of 26 left as misses; two older misses fixed (a missing ZeRO shard file, a lone SIGABRT record)); Dec 5 (set AT: 2 of 14 left as misses); Dec 5 (set AU, a logbook: 4 of 9 left as misses); Dec 5, a new session (sets AV and AW: 6 of 19 and 6 of 22 left as misses; four older misses fixed: two pasted py-spy stacks read as a hang, a cut traceback header, a WSL2 shared-memory OOM by the refit); Dec 5 (sets AX and AY: 2 of 14 and 5 of 19 left as misses; three older misses fixed by the refit, which also moved codetr-local-rank5 (rank right, class from the title) back over the threshold); Dec 5 (sets AZ and BA: 3 of 10 and 6 of 17 left as misses; the refit with them moved two older close answers to another class (llamafactory-8036, bridge-llm-reasoning-1), both inconclusive); Dec 5 (sets BB and BC: 1 of 12 and 1 of 8 left as misses; the refit with them moved torchrec-189 to another class and two older label-versus-log misses (nccl-tests-10gpu-xorg-p2p, f5tts-multinode) back over the threshold); Dec 5, thirteenth session (a symptom-only answer beside another entry's strong cause line weighs less, entry_beside_cause: five older misses fixed, among them NCCL's unhandled-CUDA-error symptom outweighing the kernel-fault or device-assert line before it); Dec 5 (sets BD-BI: 19 of 75 left as misses, most of them lines that only the thread explains (a title, a screenshot, the reporter's finding) and one-line excerpts; the refit with them left seven older right answers just under the threshold); Dec 5 (sets BJ-BL: 11 of 43 left as misses, one older miss fixed (a bare CUDA error string of illegal memory access)); Dec 5 (sets BM and BN: 10 of 26 left as misses; the refit with them left four older DDP model-mismatch answers just under the threshold); Dec 5 (set BO: 1 of 12 left as a miss, one older miss fixed by the refit (torchrec-189) and one older label-versus-log miss (nccl-tests-10gpu-xorg-p2p) back over the threshold); Dec 5, fourteenth session (sets BP-BS: 7 of 43 left as misses, most of them lines only the thread explains; the refit with them moved two older near ties (torchrec-189 again, llamafactory-8036 to the CUDA OOM reading), and the verdict threshold went from 0.86 to 0.85 by decision (cross-validated choice 0.75, confident wrong 35/1986): a cluster of single-cause answers sat at 0.855); Dec 5 (sets BT-BW: 4 of 43 left as misses, one older miss fixed by the refit (llamafactory-8036 back to the NCCL reading); the refit left five older right answers just under the threshold); Dec 5 (sets BX-CA: 11 of 42 left as misses, most of them pipeline and expert-parallel code errors no entry names and excerpts cut before their error; one older miss fixed by the refit (torchrec-189), and the refit left six older right answers, five of the DDP model-mismatch family, just under the threshold); Dec 5 (sets CB-CE: 13 of 35 left as misses, most of them classes the taxonomy lacks (activation-checkpoint recomputation, notebook spawn pickling) and PyTorch/XLA's mesh errors; the refit moved llamafactory-8036 to the CUDA OOM reading again and one older right answer just under the threshold); then generic_beside_cause (an unknown failure beside another entry's strong cause line weighs less): quantized-training-1 fixed, torchrec-189 moved again; Dec 5 (sets CF and CG: 3 of 12 left as misses, a flattened paste, a conclusion only the reporter states, a traceback cut before its OOM; the refit left the lab's dtype-mismatch pair just under the threshold); Dec 5, fifteenth session (set CH: 4 of 30 left as misses, a log that is the thread's title, a silent rank 0 the label reads as a desync, a run with no error line, a unit test's own rank; the refit with it left twelve older right answers, most of them unknown exceptions framed in checkpoint or compile code at 0.83-0.84, just under the threshold and moved one over it); Dec 5 (set CI: 3 of 36 left as misses, a two-rank Horovod stall with no odd side, a bare autograd SystemError, a job-wide answer at the rank-share line; the refit with it flipped one older near tie (fdm-4, DDP model mismatch against desync)); Dec 5 (set CJ: 4 of 28 left as misses, two logs with no error line, a cut urllib3 chain, a lone NCCL system error; three older misses fixed (a traceback through _get_default_group, and two near ties moved by the refit)); Dec 5 (set CK: 6 of 16 left as misses, logs whose failure only the thread shows (a silent rank's missing print, a machine swap, a cross-posted answer) and a lone harmless overflow line; the refit with it named rank 0 in five older shared-memory bus errors (exit -7 of local rank 0) that it had answered without a rank, and left three older right answers just under the threshold)


def test_every_scenario_is_in_the_lock():
    keys = {case_key(c, SCENARIOS) for c in CASES}
    assert not keys - set(ROWS), f"not in {LOCK.name} (run make lock): {sorted(keys - set(ROWS))[:10]}"
    assert not set(ROWS) - keys, f"in {LOCK.name} but gone: {sorted(set(ROWS) - keys)[:10]}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: case_key(c, SCENARIOS))
def test_locked_result(kb, scanner, case):
    row = ROWS.get(case_key(case, SCENARIOS))
    if row is None:
        pytest.fail("not in the lock (run make lock)")
    why = judge(row, run_case(kb, scanner, case))
    assert why is None, why


def test_known_misses_are_few_and_explained():
    misses = [r for r in ROWS.values() if r["status"] == "miss"]
    assert all(r["reason"] and not r["reason"].startswith("(reason") for r in misses), [r["case"] for r in misses if not r["reason"]]
    # a ratchet: lower it when misses get fixed; only a new held-out set's cases (each miss with
    # its reason in expected.tsv, the set's numbers in eval/HISTORY.md) may raise it
    assert len(misses) <= MAX_KNOWN_MISSES, f"{len(misses)} known misses of {len(ROWS)}"
