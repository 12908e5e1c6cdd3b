"""Reading across the lines of a run: two processes that announce one rank (claims.py), a
torchrun failure record pasted without its "[i]:" line (launcher.py), and a peer that
waiting ranks name as the one they wait for (hypotheses.late_accused)."""

from __future__ import annotations

from rankdoctor.claims import claimed_twice
from rankdoctor.diagnose.launcher import read_launcher
from rankdoctor.scan import scan_text


def _announce(ranks: list[int], world: int, old: bool = False) -> str:
    # Lightning's wording (lightning/fabric/utilities/distributed.py); older releases: "initializing ddp"
    head = "initializing ddp" if old else "Initializing distributed"
    return "".join(f"{head}: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}\n" for r in ranks)


def _claims(kb, text: str):
    return claimed_twice(scan_text(kb, text).facts)


def test_two_nodes_with_one_node_rank_claim_every_rank_twice(kb):
    found = _claims(kb, _announce([1, 1, 2, 2, 3, 3, 0, 0], 8, old=True))
    assert len(found) == 1
    assert "global rank 1 announced twice" in found[0].detail and "4 of the 8 ranks never announced" in found[0].detail


def test_every_rank_once_or_one_node_of_two_is_no_claim(kb):
    assert _claims(kb, _announce([0, 2, 1, 3], 4)) == []
    assert _claims(kb, _announce([0, 1, 2, 3], 8)) == []  # one node's file of a two-node job


def test_a_restart_announces_again_after_a_failure(kb):
    text = _announce([0, 1], 4) + "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nRuntimeError: boom\n" + _announce([0, 1], 4)
    assert _claims(kb, text) == []


def test_a_second_run_far_below_the_first_is_no_claim(kb):
    text = _announce([0, 1], 4) + "".join(f"Epoch 0: {i}/500 loss=1.0\n" for i in range(200)) + _announce([0, 1], 4)
    assert _claims(kb, text) == []


def test_a_failure_record_without_its_index_line(kb):
    # torchrun's ChildFailedError record, pasted from its "rank :" line on (real-holdout45/megatron-lm-1880)
    text = ("  rank      : 0 (local_rank: 0)\n  exitcode  : -11 (pid: 6421)\n  error_file: <N/A>\n"
            "  traceback : Signal 11 (SIGSEGV) received by PID 6421\n")
    records = read_launcher(scan_text(kb, text).facts).records
    assert [(r.rank, r.exitcode, r.pid) for r in records] == [(0, -11, 6421)]


def test_two_records_without_index_lines_are_two_records(kb):
    text = ("  rank      : 2 (local_rank: 2)\n  exitcode  : -9 (pid: 11)\n"
            "  rank      : 3 (local_rank: 3)\n  exitcode  : 1 (pid: 12)\n")
    records = read_launcher(scan_text(kb, text).facts).records
    assert [(r.rank, r.exitcode) for r in records] == [(2, -9), (3, 1)]


def test_a_config_line_named_host_opens_no_record(kb):
    assert read_launcher(scan_text(kb, "  host      : localhost\n  time      : 2024-01-01_00:00:00\n").facts).records == []


def test_nvidia_smi_shows_several_processes_of_one_program_on_one_gpu(kb):
    """nvidia-smi's process table pasted into a log (real rows: pytorch/pytorch#64130): every DDP
    process holds a context on GPU 0 besides its own GPU, read as ranks not pinned to their device,
    whether or not a log viewer's "| " was peeled off; one process on two GPUs (nn.DataParallel
    does that too, rwth-i6/returnn#1469) and one process per GPU are no claim."""
    from rankdoctor.claims import shared_gpu

    rows = (
        "|    0   N/A  N/A    331903      C   ...py3.6-torch1.8/bin/python     1733MiB |\n"
        "|    0   N/A  N/A    331904      C   ...py3.6-torch1.8/bin/python        0MiB |\n"
        "|    1   N/A  N/A    331903      C   ...py3.6-torch1.8/bin/python        0MiB |\n"
        "|    1   N/A  N/A    331904      C   ...py3.6-torch1.8/bin/python     1717MiB |\n"
    )
    found = shared_gpu(scan_text(kb, rows).facts)
    assert len(found) == 1 and found[0].detail.startswith("GPU 0 holds 2 processes of '...py3.6-torch1.8/bin/python'")
    one_pid = (
        "|    0   N/A  N/A     62563      C   ...0-torch2.1/bin/python3.10      966MiB |\n"
        "|    1   N/A  N/A     62563      C   ...0-torch2.1/bin/python3.10     1030MiB |\n"
    )
    assert shared_gpu(scan_text(kb, one_pid).facts) == []
    own = (
        "|    0   N/A  N/A    331903      C   python     1733MiB |\n"
        "|    1   N/A  N/A    331904      C   python     1717MiB |\n"
    )
    assert shared_gpu(scan_text(kb, own).facts) == []
    d = _diagnose(kb, rows)
    assert d.diagnoses[0].entry == "ranks-share-gpu-contexts" and d.diagnoses[0].klass == "duplicate-gpu"


def _diagnose(kb, text: str):
    from rankdoctor.diagnose.engine import diagnose

    return diagnose(kb, scan_text(kb, text))


# c10d's wait for one key of the default group's gloo addresses (TCPStore's DistStoreError)
_WAIT = "[default{r}]:torch.distributed.DistStoreError: wait timeout after 10000ms, keys: /default_pg/0//cpu//0/{k}\n"
_RESET = ("[default{r}]:[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
          "[127.0.0.1]:27018: Connection reset by peer.\n")


def _beyond(kb, text: str):
    from rankdoctor.claims import waits_beyond_world
    scan = scan_text(kb, text)
    return waits_beyond_world(scan.facts, scan.ranks_seen | scan.local_ranks_seen)


def test_a_wait_for_a_rank_no_other_process_needs_is_its_own_world(kb):
    # rank 1 of 3 started with WORLD_SIZE=4: it alone waits for rank 3, the others formed the
    # group without it and lost it later
    found = _beyond(kb, _RESET.format(r=2) + _RESET.format(r=0) + _WAIT.format(r=1, k=3))
    assert len(found) == 1 and "rank 1 waits at init for the address of rank 3" in found[0].detail


def test_every_process_waiting_for_one_rank_is_a_rank_that_never_came(kb):
    text = "".join(_WAIT.format(r=r, k=3) for r in (0, 1, 2))
    assert _beyond(kb, text) == []


def test_a_waited_for_rank_that_shows_or_lies_inside_the_range_is_no_claim(kb):
    late = "[default3]:rank 3: pulling the container image layers 1/5\n"
    assert _beyond(kb, late + _RESET.format(r=2) + _WAIT.format(r=1, k=3)) == []
    # rank 2 is inside the others' range (0-3): it may simply be late
    assert _beyond(kb, _RESET.format(r=3) + _RESET.format(r=0) + _WAIT.format(r=1, k=2)) == []


def test_the_beyond_world_wait_is_the_waiters_own_failure(kb):
    from rankdoctor.diagnose.engine import diagnose
    text = _RESET.format(r=2) + _RESET.format(r=0) + _WAIT.format(r=1, k=3)
    top = diagnose(kb, scan_text(kb, text)).diagnoses[0]
    assert top.entry == "rank-beyond-world-size" and top.initiating_rank == 1
