"""The per-rank timeline model: lanes, placement, the initiating event, links, and
grouping of a thousand ranks into a readable number of lanes."""

from __future__ import annotations

from rankdoctor.diagnose.engine import diagnose
from rankdoctor.report.timeline import MAX_LANES, build_timeline, rank_label
from rankdoctor.scan import scan_text

from .conftest import SCENARIOS

# real line formats (tests/scenarios/real/comms-11-peer-crash-funasr-rank2-oom/log.txt)
OOM = (
    "[rank{r}]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU  has a total "
    "capacity of 79.15 GiB of which 141.25 MiB is free."
)
WATCHDOG = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600037 milliseconds before timing out."
)


def _timeline(kb, text: str, **kw):
    scan = scan_text(kb, text, name="job.log")
    result = diagnose(kb, scan)
    return result, build_timeline(result, scan, **kw)


def _eight_ranks(stamped: bool) -> str:
    def stamp(sec: int) -> str:
        return f"2026-05-01 10:{sec // 60:02d}:{sec % 60:02d},000 " if stamped else ""

    lines = [stamp(3) + OOM.format(r=3)]
    lines += [stamp(600 + r) + WATCHDOG.format(r=r) for r in range(8) if r != 3]
    return "\n".join(lines) + "\n"


def test_eight_ranks_in_time(kb):
    result, tl = _timeline(kb, _eight_ranks(stamped=True))
    assert result.diagnoses[0].initiating_rank == 3
    assert tl.axis == "time" and tl.span_s == 604
    assert [lane.label for lane in tl.lanes] == [f"rank {r}" for r in range(8)]
    init = tl.lanes[3]
    assert init.initiating and not init.collateral
    oi, oj = tl.origin
    assert oi == 3 and init.marks[oj].initiating and init.marks[oj].role == "cause"
    assert init.marks[oj].x == 0.0  # the OOM came first
    # every collateral rank's timeout is linked to the OOM, and sits ~10 minutes later
    assert sorted(link.lane for link in tl.links) == [0, 1, 2, 4, 5, 6, 7]
    for link in tl.links:
        lane = tl.lanes[link.lane]
        assert lane.collateral and lane.marks[link.mark].role == "symptom"
        assert lane.marks[link.mark].x > 0.95


def test_without_timestamps_order_follows_the_file(kb):
    _, tl = _timeline(kb, _eight_ranks(stamped=False))
    assert tl.axis == "position"
    xs = {lane.ranks[0]: lane.marks[0].x for lane in tl.lanes}
    assert xs[3] == 0.0 and xs[7] == 1.0
    assert xs[0] < xs[1] < xs[2] < xs[4]


def test_a_thousand_ranks_fit_in_a_few_lanes(kb):
    lines = [WATCHDOG.format(r=r) for r in range(1024) if r != 512]
    lines.insert(300, OOM.format(r=512))
    result, tl = _timeline(kb, "\n".join(lines) + "\n")
    assert result.diagnoses[0].initiating_rank == 512
    assert tl.grouped and len(tl.lanes) <= MAX_LANES
    assert tl.n_ranks == 1024
    labels = [lane.label for lane in tl.lanes]
    assert "rank 512" in labels
    assert "ranks 0-511,513-1023 (1023 ranks)" in labels
    big = tl.lanes[labels.index("ranks 0-511,513-1023 (1023 ranks)")]
    assert big.collateral and big.size == 1023
    assert [link.lane for link in tl.links] == [labels.index(big.label)]
    assert sum(lane.size for lane in tl.lanes) == 1024


def test_ranks_that_differ_get_their_own_lane_when_grouped(kb):
    lines = [WATCHDOG.format(r=r) for r in range(64) if r not in (5, 9)]
    lines.append(OOM.format(r=5))
    lines.append("[rank9]: some unrelated info line")
    _, tl = _timeline(kb, "\n".join(lines) + "\n", max_lanes=8)
    assert [(lane.label, lane.silent) for lane in tl.lanes] == [
        ("ranks 0-4,6-8,10-63 (62 ranks)", False),  # the same timeout everywhere: one lane
        ("rank 5", False),  # the initiating rank always keeps its own lane
        ("rank 9", True),  # seen, but no matching line
    ]


def test_silent_straggler_is_the_initiating_lane(kb):
    log = SCENARIOS / "lab" / "straggler-rank0" / "console.log"
    scan = scan_text(kb, log.read_bytes(), name="console.log")
    result = diagnose(kb, scan)
    tl = build_timeline(result, scan)
    top = result.diagnoses[0]
    assert top.initiating_rank == 0
    lane = next(lane for lane in tl.lanes if lane.initiating)
    assert lane.ranks == [0]
    # rank 0 printed no failure line; its last sign of life (a progress line) stands in
    if lane.marks:
        # the mark may also hold what the launcher did to rank 0 afterwards (its SIGTERM)
        assert lane.marks[tl.origin[1]].first.role == "last-seen"
    else:
        assert tl.origin == (tl.lanes.index(lane), None)
    assert {tl.lanes[link.lane].ranks[0] for link in tl.links} == {1, 2, 3}


def test_glog_times_take_the_year_of_the_dated_lines(kb):
    # glog lines carry no year, ISO lines do: both are one clock once glog's get the year
    text = (
        "I0501 10:00:00.000000 1 train.py:1] " + OOM.format(r=1) + "\n"
        + "2026-05-01 10:10:00,000 " + WATCHDOG.format(r=0) + "\n"
    )
    _, tl = _timeline(kb, text)
    assert tl.axis == "time" and tl.span_s == 600
    assert tl.start == "2026-05-01T10:00:00.000"
    xs = {lane.ranks[0]: lane.marks[0].x for lane in tl.lanes}
    assert xs == {0: 1.0, 1: 0.0}


def test_clocks_days_apart_fall_back_to_file_position(kb):
    text = "2019-03-02 08:00:00,000 " + OOM.format(r=1) + "\n" + "2026-05-01 10:10:00,000 " + WATCHDOG.format(r=0) + "\n"
    _, tl = _timeline(kb, text)
    assert tl.axis == "position" and tl.untimed_lanes == 0


def test_a_torchrun_console_is_placed_by_time(kb):
    # a real lab run: each rank's glog lines (no year) and the script's dated lines are
    # interleaved in one console; the four ranks' graph breaks came within 0.16 s of each
    # other at the start (lines 9 to 178 of 329), the failure two seconds later
    log = SCENARIOS / "lab" / "compile-desync" / "console.log"
    scan = scan_text(kb, log.read_bytes(), name="console.log")
    tl = build_timeline(diagnose(kb, scan), scan)
    assert tl.axis == "time" and 2 < tl.span_s < 3
    assert tl.start == "2026-11-30T05:08:07.165" and tl.untimed_lanes == 0
    marks = [m for lane in tl.lanes for m in lane.marks]
    breaks = [m.x for m in marks if "graph" in m.first.text.lower()]
    assert len(breaks) == 4 and max(breaks) < 0.1  # by position they spread over half the axis
    failures = [m.x for m in marks if m.role in ("cause", "symptom")]
    assert failures and min(failures) > 0.8


def test_only_a_rank_without_times_falls_back_to_position(kb, tmp_path):
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.scan import scan_sources

    for r in range(4):
        noise = [f"[rank{r}]: step {i} loss 2.{i:03d}" for i in range(50)]
        if r == 3:  # this rank's file prints no time
            body = noise + [OOM.format(r=r)]
        else:
            body = [f"2026-05-01 10:00:{i % 60:02d},000 " + n for i, n in enumerate(noise[:10])] + [
                f"2026-05-01 10:10:0{r},000 " + WATCHDOG.format(r=r)
            ]
        (tmp_path / f"rank_{r}.log").write_text("\n".join(body) + "\n")
    scan = scan_sources(kb, expand_inputs([str(tmp_path)]))
    result = diagnose(kb, scan)
    tl = build_timeline(result, scan)
    assert result.diagnoses[0].initiating_rank == 3
    assert tl.axis == "time" and tl.untimed_lanes == 1
    by_rank = {lane.ranks[0]: lane for lane in tl.lanes}
    assert by_rank[3].by_position and not any(by_rank[r].by_position for r in (0, 1, 2))
    assert by_rank[3].marks[-1].x == 1.0  # the OOM is its file's last line
    assert by_rank[0].marks[-1].x < by_rank[1].marks[-1].x < by_rank[2].marks[-1].x == 1.0


def test_no_failure_gives_empty_lanes(kb):
    _, tl = _timeline(kb, "[rank0]: step 1 loss 2.3\n[rank1]: step 1 loss 2.3\n")
    assert tl.origin is None and not tl.links
    assert all(lane.silent for lane in tl.lanes)


def test_rank_label():
    assert rank_label([]) == "no rank"
    assert rank_label([7]) == "rank 7"
    assert rank_label([0, 1, 2, 5]) == "ranks 0-2,5 (4 ranks)"


def test_a_line_two_entries_name_shows_its_stronger_role(kb):
    from rankdoctor.report.timeline import _points

    # NCCL's bind failure (real line, open-mmlab/mmdetection#7047) is tcpstore-port-in-use's cause
    # and, like every NCCL WARN line, the catch-all entry's context: the timeline shows the cause
    text = b"gpu2:1653:1695 [0] include/socket.h:347 NCCL WARN Call to bind failed : Address already in use\n"
    scan = scan_text(kb, text)
    assert {e.role for e in scan.events} == {"cause", "context"}
    points = _points(scan, None, {}, lambda time, ts: ts)
    assert [(p.role, p.signature.split("/")[0]) for p in points] == [("cause", "tcpstore-port-in-use")]
