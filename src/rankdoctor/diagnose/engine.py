"""From scanned evidence to a ranked diagnosis, in small pure stages:

1. ``attribution``: every event gets its global rank (a new list; the scan is not changed);
2. ``ranktable``: one row per rank — its own first failure, how it ended, its last work,
   what it waited in, whom it accused;
3. ``hypotheses``: (entry, initiating ranks) pairs proposed from entries' lines, cross-rank
   findings and failure lines no entry names;
4. ``features`` + ``scoring``: each hypothesis described by named features, weighed by one
   fitted function into probabilities;
5. ``present``: the winner as a finding with evidence, root cause, fix and missing facts.

The verdict is ``no-failure-found`` when nothing shows a failure (no cause or symptom
line, no exception, no abort, no death, no stack dump of a live process, no ``--hung``);
otherwise ``diagnosed`` when the top answer (its class, and the rank it names) has at least
the calibrated threshold of probability, else ``inconclusive``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..events import Event, ScanResult
from ..kb.loader import KnowledgeBase
from .attribution import Attributed, attribute
from .collectives import ranks_phrase
from .common import fingerprint, said
from .features import Context, context, featurize
from .frcandidates import fr_events
from .hypotheses import Hypothesis, generate
from .model import Diagnosis, InputInfo
from .present import to_finding
from .ranktable import LAUNCHER_FAILED, End, RankTable, build_rank_table, fingerprints_differ, is_cut_wait, mark_hung, warning_record, EXC_TYPE, process_pid
from . import restarts
from .ras import ras_notes
from .scoring import Weights, default_weights, posterior

if TYPE_CHECKING:
    from ..flightrec.analyze import FRReport

__all__ = ["diagnose", "weigh", "rescore", "answers", "claimable", "fingerprint", "Weighing", "Scored", "Answer"]

MAX_FINDINGS = 3


@dataclass
class Scored:
    hyp: Hypothesis
    features: dict[str, float]
    score: float
    p: float


@dataclass
class Weighing:
    """Everything the engine computed for one run: what the views' ``-v`` shows and what
    ``rankdoctor.fit`` learns from."""

    att: Attributed
    table: RankTable
    cx: Context | None
    scored: list[Scored]  # best first
    null_p: float
    failed: bool  # the evidence shows a failure (else the run looks healthy)
    restarted: "restarts.Scope | None" = None  # the launcher restarted the job: the attempt read


def weigh(kb: KnowledgeBase, scan: ScanResult, fr: "FRReport | None" = None, weights: Weights | None = None,
          hung: bool = False) -> Weighing:
    """``hung``: the job is known to have stopped making progress (``diagnose --hung``, or
    ``watch --hung-after`` seeing no line for that long), so the logs end where it hung even
    if no line says so."""
    weights = weights or default_weights()
    scan, restarted = restarts.scope(scan)
    att = attribute(kb, scan)
    if restarted is not None and restarted.recovered is not None and not hung:
        # the last attempt finished normally: the job recovered from the failure that made
        # the launcher restart it (restarts.note says which), so the job did not fail
        return Weighing(att, build_rank_table(kb, att, fr), None, [], 1.0, False, restarted)
    if fr is not None:
        att = Attributed(att.events + fr_events(fr), att.summary, att.seen, att.world_size, att.stacks, att.ras)
    table = build_rank_table(kb, att, fr)
    # stack dumps that are the only evidence, most ranks waiting in a collective and some
    # elsewhere: stacks taken of a job that hung (with logs, the logs say whether it failed)
    # ranks blocked in send/recv on each other can never move on: a deadlock, whatever else
    failed = _shows_failure(att, table, fr) or (table.stack_hang and not scan.inputs) or bool(table.p2p_cycle)
    live_stacks = [d for d in att.stacks if not d.crash]
    if (hung or live_stacks) and not failed:
        # said to have hung, or its live processes' stacks were taken (nobody dumps the stacks
        # of a job that runs well; a crash's own dump is a failure line, read above), and
        # nothing here shows a failure: the logs end where it hung, every rank was waiting
        # (evidence of a failure is read as always)
        mark_hung(table, att.events, "stated" if hung else "stacks")
        failed = True
    if not failed:
        return Weighing(att, table, None, [], 1.0, False, restarted)
    # a line the program got past (table.handled) proposes nothing and describes nothing
    events = [e for e in att.events if e.where not in table.handled] if table.handled else att.events
    cx = context(kb, table, events)
    hyps = generate(kb, table, events)
    scored, null_p = _score([(h, featurize(h, cx)) for h in hyps], weights)
    return Weighing(att, table, cx, scored, null_p, True, restarted)


def rescore(w: Weighing, weights: Weights) -> Weighing:
    """The same hypotheses and features weighed with other weights (fitting, cross-validation)."""
    if not w.scored:
        return w
    scored, null_p = _score([(s.hyp, s.features) for s in w.scored], weights)
    return Weighing(w.att, w.table, w.cx, scored, null_p, w.failed, w.restarted)


def _score(described: list[tuple[Hypothesis, dict[str, float]]], weights: Weights) -> tuple[list[Scored], float]:
    """Every hypothesis's score and probability, best first, and the "none of these" share."""
    scores = [weights.score(f) for _, f in described]
    ps, null_p = posterior(scores, weights.null)
    scored = [Scored(h, f, sc, p) for (h, f), sc, p in zip(described, scores, ps)]
    scored.sort(key=lambda x: (-x.p, x.hyp.entry.id, len(x.hyp.ranks), x.hyp.ranks))
    return scored, null_p


@dataclass
class Answer:
    """One entry's share of the probability, and where it started."""

    entry_p: float
    class_p: float
    best: Scored  # the entry's most likely (ranks) hypothesis
    ranks: tuple[int, ...]  # () when no rank set holds enough of the entry's probability
    rivals: list[Scored]  # the entry's other rank hypotheses, best first
    rank_p: float = 1.0  # share of the entry's probability on the named rank set (1 when none is named)

    @property
    def confidence(self) -> float:
        """Probability that the whole answer is right: its class, and where it started
        when it names a rank. The verdict threshold applies to this."""
        return self.class_p * self.rank_p


def answers(w: Weighing, weights: Weights) -> list[Answer]:
    """Entries by probability (summed over their rank hypotheses), classes first."""
    by_entry: dict[str, list[Scored]] = {}
    for s in w.scored:
        by_entry.setdefault(s.hyp.entry.id, []).append(s)
    class_p: dict[str, float] = {}
    for s in w.scored:
        class_p[s.hyp.entry.class_] = class_p.get(s.hyp.entry.class_, 0.0) + s.p
    out = []
    for items in by_entry.values():
        entry_p = sum(s.p for s in items)
        # one rank set per kind of reasoning can be proposed twice (own lines, a finding):
        # the rank set's probability is what all of them give it
        by_ranks: dict[tuple[int, ...], float] = {}
        for s in items:
            by_ranks[s.hyp.ranks] = by_ranks.get(s.hyp.ranks, 0.0) + s.p
        # where it started: the likeliest rank set, "unknown" (no rank) competing with the
        # others; a set is named only if it also holds rank_share of the entry's probability
        ranks, p_ranks = max(by_ranks.items(), key=lambda kv: (kv[1], -len(kv[0]), tuple(-r for r in kv[0])))
        if len(ranks) > 1:
            # several ranks started it together: the hypotheses naming one or some of them
            # agree that it started within this set
            p_ranks = sum(p for rs, p in by_ranks.items() if rs and set(rs) <= set(ranks))
        if entry_p <= 0 or p_ranks / entry_p < weights.rank_share:
            ranks = ()
        rank_p = p_ranks / entry_p if ranks and entry_p > 0 else 1.0
        best = next((s for s in items if s.hyp.ranks == ranks), items[0])
        out.append(Answer(entry_p, class_p[best.hyp.entry.class_], best, ranks, [s for s in items if s is not best], rank_p))
    # within a class, the entry whose answer as stated (at the ranks it names) is likeliest
    out.sort(key=lambda a: (-a.class_p, -a.entry_p * a.rank_p, a.best.hyp.entry.id))
    return out


def diagnose(kb: KnowledgeBase, scan: ScanResult, fr: "FRReport | None" = None, weights: Weights | None = None,
             hung: bool = False) -> Diagnosis:
    weights = weights or default_weights()
    w = weigh(kb, scan, fr, weights, hung)
    inputs = [InputInfo(i.path, i.bytes, i.lines) for i in scan.inputs]
    warnings = [x for i in scan.inputs for x in i.warnings] + scan.warnings
    if w.table.hung_by == "stated":
        warnings.append("no line shows a failure: read as a hang because the job was said to have stopped "
                        "making progress (--hung); the logs are taken to end where it hung")
    elif w.table.hung:
        warnings.append(f"no line shows a failure: read as a hang because {sum(not d.crash for d in scan.stacks)} stack dump(s) of live "
                        "processes are among the inputs (stacks are taken of a job that stopped); the logs are taken "
                        "to end where it hung")
    seen = sorted(w.att.seen)
    count = w.att.world_size or (max(seen) + 1 if seen else 0)
    warnings += ras_notes(w.att.ras, w.failed)
    # (the lines of a stop on purpose have a note of their own, below)
    warnings += handled_notes({k: v for k, v in w.table.handled.items() if k not in w.table.stopped_lines},
                              w.table.got_past, w.table.teardown, w.table.recovered, w.table.worked_past,
                              w.table.warned_done, w.table.empty_eval, w.table.repeated)
    warnings += outlived_notes(w.table)
    warnings += streak_notes(w.att.events)
    if w.table.stopped_working is not None:
        stop, step, gap, interval = w.table.stopped_working
        sig = kb.signature(stop.entry, stop.signature) if stop.entry else None
        m = re.search(sig.regex, stop.text, re.I if sig.ignore_case else 0) if sig is not None else None
        quoted = said(stop.text if m is None else stop.text[m.start():])  # a glued line: from the stop's own words
        about = "about " if "estimated" in step.captures else ""  # a progress bar's elapsed time, from its start
        warnings.append(f"{stop.source}:{stop.line}: the job was stopped from outside (\"{quoted}\") "
                        f"{about}{gap:.1f} s after its last step ({step.source}:{step.line}), while it made a step every "
                        f"{interval:.1f} s: read as a stop on purpose (a person's Ctrl-C, a scheduler's preemption or "
                        "time limit), not as the kill of a hung job")
    if w.restarted is not None:
        warnings.append(restarts.note(w.restarted))
    if not w.failed:
        return Diagnosis("no-failure-found", [], count, seen, inputs, warnings, table=w.table, weighing=w)
    ranked = answers(w, weights)
    findings = [to_finding(kb, a, w, weights) for a in ranked[:MAX_FINDINGS]]
    verdict = "diagnosed" if ranked and ranked[0].confidence >= weights.threshold and claimable(ranked[0], w) else "inconclusive"
    return Diagnosis(verdict, findings, count, seen, inputs, warnings, table=w.table, weighing=w)


def outlived_notes(table: RankTable) -> list[str]:
    """One note per rank the job went on without (``RankTable.outlived``)."""
    notes = []
    for r, step in sorted(table.outlived.items()):
        rec = table.rows[r].exit
        how = f"exited with code {rec.exitcode}" if rec is not None and rec.exitcode else "failed"
        where = f"{rec.source}:{rec.line}" if rec is not None else step.source
        first, last = step.captures.get("first"), step.captures.get("last")
        notes.append(f"{where}: rank {r} {how}, and the job went on without it: rank {step.rank} reported steps "
                     f"{first} to {last} after it ({step.source}:{step.line}), which ranks that train together cannot do "
                     "without a dead peer: read as a worker the job re-formed without (an elastic scale-in, a "
                     "restarted group), not as the job's failure")
    return notes


def handled_notes(handled: dict[tuple[str, int], Event], got_past: set = frozenset(),
                  teardown: set = frozenset(), recovered: set = frozenset(), worked_past: set = frozenset(),
                  warned_done: set = frozenset(), empty_eval: set = frozenset(),
                  repeated: set = frozenset()) -> list[str]:
    """One note per failure the program got past (a logged exception, a warning or error
    record), at its first place, with how many more lines (copies in other files, other
    ranks) say the same. ``got_past``: the places whose rank went on to later steps while
    another rank failed after them (the run failed anyway). ``repeated``: one note for all
    the exceptions that processes printed again and again."""
    groups: dict[tuple, list[tuple[tuple[str, int], Event]]] = {}
    again = sorted((where, ev) for where, ev in handled.items() if where in repeated)
    for where, ev in sorted(handled.items()):
        if where not in repeated:
            groups.setdefault((ev.entry or ev.signature, said(ev.text)), []).append((where, ev))
    notes = []
    if again:
        (source, line), ev = again[0]
        kinds = sorted({m.group(1) for _, e in again if (m := EXC_TYPE.match(said(e.text, None)))})
        procs = len({(e.source, e.host, process_pid(e)) for _, e in again})
        notes.append(f"{source}:{line}: {len(again)} exception line(s) ({', '.join(kinds) or 'cut tracebacks'}) that "
                     f"{procs} process(es) each printed again and again, the program logging them: a process dies of an "
                     "exception once, so each lived on after them; read as errors the program caught and logged, not "
                     f"as a failure: \"{said(ev.text)}\"")
    for (what, message), places in groups.items():
        (source, line), ev = places[0]
        ranks = sorted({e.rank for _, e in places if e.rank is not None})
        more = (f", and {len(places) - 1} more line(s) like it" if len(places) > 1 else "") + \
            (f" ({ranks_phrase(ranks)})" if ranks else "")
        if (source, line) in empty_eval:
            notes.append(f"{source}:{line}: a non-finite evaluation metric ({what}): \"{message}\"{more}: just below the "
                         "progress bar of a loop that ran no iteration (\"0it\"), so it is the mean over no batch (an empty "
                         "or missing evaluation split), not a divergence")
            continue
        if (source, line) in recovered:
            notes.append(f"{source}:{line}: a non-finite loss ({what}): \"{message}\"{more}: its rank reported finite "
                         "losses again later and no rank died or waited, so it is read as a bad step the program got "
                         "past, not as a divergence")
            continue
        if (source, line) in teardown:
            notes.append(f"{source}:{line}: printed as the job ended normally (after it said its work was done, before "
                         "the job went on to say so, or just before its launcher said every worker exited 0): "
                         f"\"{message}\"{more}: read as the job's teardown, not as a failure")
            continue
        kind = ("an exception the program logged and got past" if ev.signature == "python-exception"
                else f"a warning the program went on from ({what})" if warning_record(ev.text)
                else f"an error record the program went on from ({what})")
        why = ("its rank went on to later steps after it, and another rank failed after it, so it is not read as where "
               "the failure started" if (source, line) in got_past else
               "the job said its work ended normally after it (a launcher's record that every worker exited 0, a "
               "trainer's closing record), so the program went on from it to a normal end"
               if (source, line) in warned_done else
               "its rank went on to later steps after it and ended cleanly while other ranks waited, so it did not die of "
               "it: what they waited for is read elsewhere" if (source, line) in worked_past else
               "every rank went on working after it and none died or waited, so it is not read as a failure")
        notes.append(f"{source}:{line}: {kind}: \"{message}\"{more}: {why}")
    return notes


def streak_notes(events: list[Event]) -> list[str]:
    """One note per repeated line whose streak the program got past (attribution's
    ``_escalate_repeats``), at its first place."""
    notes, seen = [], set()
    for ev in events:
        n = ev.captures.get("streak_got_past")
        if n is None or (ev.entry, ev.signature) in seen:
            continue
        seen.add((ev.entry, ev.signature))
        notes.append(f"{ev.source}:{ev.line}: a line repeated {n} times ({ev.entry}), then stopped while the program "
                     f"went on without a failure: \"{said(ev.text)}\": read as a passing streak, not as a failure")
    return notes


def claimable(a: Answer, w: Weighing) -> bool:
    """Whether the answer may be stated as a diagnosis at all (given the confidence): not
    when the job was only said to have hung (no line shows a failure) and no line of the
    answer's entry is in the logs either. Then the answer is a prior over hangs of this
    shape, however likely: it stays inconclusive and names the check that tells."""
    return not (w.table.hung and a.best.features.get("entry_none", 0.0))


def _shows_failure(att: Attributed, table: RankTable, fr: "FRReport | None") -> bool:
    """A cause or symptom line, a rank's own exception or abort, a death the launcher
    saw, ranks whose last collectives differ, or a Flight Recorder mismatch/hang: the run failed, whether or not an entry names
    how. NCCL INFO noise, warnings and clean exits are not failures."""
    if any(e.role in ("cause", "symptom") and e.where not in table.handled for e in att.events if e.entry):
        return True
    if any(is_cut_wait(e) for e in att.events):  # a traceback cut off while it waited in a collective
        return True
    if table.unranked_failures or any(rw.failures for rw in table.rows.values()):
        return True
    if any(rw.end in (End.own_death, End.died_waiting) for rw in table.rows.values()):
        return True
    # a launcher's report that a worker failed, when the paste stops before saying whose
    # (torchrun's "train.py FAILED" block or its ChildFailedError, spawn's exceptions) or
    # names no rank ("exits with return code = 1"): the run failed, how is not shown
    # (a task the launcher stopped after the job's own word of success is teardown)
    if att.summary.failed_reported or any(r.exitcode and r.rank not in table.outlived and (r.source, r.line) not in table.teardown
                                          for r in att.summary.records):
        return True
    if any(e.signature == "python-exception" and LAUNCHER_FAILED.search(e.captures.get("value", "")) for e in att.events):
        return True
    # TORCH_DISTRIBUTED_DEBUG=DETAIL fingerprints: ranks last entered different collectives
    if fingerprints_differ(table):
        return True
    # NCCL RAS: a process or rank it cannot reach (mapped to a global rank or not), stuck
    # collective counts, or a rank's NCCL error
    if table.ras_dead or table.ras_behind or (table.ras is not None and table.ras.shows_failure):
        return True
    return fr is not None and fr.verdict in ("mismatch", "hang")
