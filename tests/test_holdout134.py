"""Readings learned from held-out set DZ (tests/scenarios/real-holdout134: logs people committed to
public repositories, measured before any change): a scheduler's time limit that ends a job still
counting steps on a tqdm bar is no hang (the bar's elapsed time, from the last stamped line before
it began, puts its last step on the log's clock; Slurm's "CANCELLED AT <time>" gives the stop's);
torch_npu's closing line for a failed HCCL collective is a wait, not a failure of the rank; a
distribution refusing NaN or negative parameters is a numeric divergence; a launcher's line about
a rank is no sign of that rank's life."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS

DZ = SCENARIOS / "real-holdout134"
SFNO = DZ / "p1-sfno-e3sm-4rank-ddp-zero1-walltime-healthy" / "log.txt"


def test_a_time_limit_that_ends_a_job_still_stepping_on_a_tqdm_bar_is_no_hang(tmp_path):
    # 4-rank DDP, a step every ~72 s on a tqdm bar with no clock; Slurm cancels the job at its time
    # limit about 25 s after the bar's last step (the bar began after the 12:44:34 line)
    d = rankdoctor.diagnose(SFNO)
    assert d.verdict == "no-failure-found"
    assert any("read as a stop on purpose" in w and "DUE TO TIME LIMIT" in w for w in d.warnings)
    # the same job whose bar stopped at 3 minutes while the cancel came at 26: a hang the
    # time limit ended
    raw = SFNO.read_bytes()
    *head, last = raw.rstrip(b"\n").split(b"\n")
    redraws = last.split(b"\r")
    cancel = redraws[-1][redraws[-1].index(b"slurmstepd:"):]
    bar = redraws[-1][:redraws[-1].index(b"slurmstepd:")]
    assert b"25:54<" in bar
    cut = tmp_path / "stopped-early.log"
    cut.write_bytes(b"\n".join(head) + b"\n" + b"\r".join(redraws[:4]) + cancel + b"\n")
    d = rankdoctor.diagnose(cut)
    assert d.verdict != "no-failure-found"


def test_slurm_s_cancel_line_carries_its_own_time():
    kb = load_kb()
    text = "slurmstepd: error: *** JOB 42221 ON clr1247 CANCELLED AT 2022-04-14T16:20:46 DUE TO TIME LIMIT ***\n"
    ev = next(e for e in iter_events(scan_text(kb, text)) if e.entry == "slurm-job-time-limit")
    assert ev.ts is not None and ev.time == "2022-04-14T16:20:46"


def test_torch_npu_s_closing_line_for_a_failed_hccl_collective_is_a_wait():
    # ranks 1-7 raise it in dist.barrier while rank 0 still saves videos: HCCL's timeout, not a crash
    log = DZ / "p4-ascend-8npu-i2v-rank0-attnmap-save-barrier-hccl-timeout" / "log.txt"
    kb = load_kb()
    waits = [e for e in iter_events(scan_text(kb, log.read_bytes())) if e.entry == "hccl-collective-execution-timeout"]
    assert waits and all(e.role == "symptom" for e in waits)
    # which rank they waited for shows only as the pid torchrun SIGTERMs (a known miss, locked):
    # the answer is not a confident crash of theirs (the class flips between the straggler and the
    # lost-peer readings with refits)
    d = rankdoctor.diagnose(log)
    assert d.verdict == "inconclusive"
    assert d.diagnoses[0].klass in ("straggler-timeout", "peer-rank-crashed")
    compute = ("RuntimeError: The Inner error is reported as above. The process exits for this inner error, "
               "and the current working operator name is Conv3DTranspose.\n")
    assert not [e for e in iter_events(scan_text(kb, compute)) if e.entry == "hccl-collective-execution-timeout"]


def test_a_distribution_refusing_nan_parameters_is_a_divergence():
    # PPO on 4 GPUs: rank 2's policy std went NaN and torch.normal refused it
    d = rankdoctor.diagnose(DZ / "p2-sonic-ppo-accelerate-negative-std" / "log.txt")
    assert d.diagnoses[0].klass == "nan-divergence"


def test_a_launcher_line_about_a_rank_is_no_sign_of_its_life():
    text = ("[2026-05-17 15:10:26,000] [rank1]: still working\n"
            "[2026-05-17 15:10:47,905] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
            "local_rank: 1 (pid: 188120) of binary: /usr/bin/python3.9\n")
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.diagnose.ranktable import build_rank_table
    kb = load_kb()
    table = build_rank_table(kb, attribute(kb, scan_text(kb, text)), None)
    row = table.row(1)
    assert row.last_seen is None or "launcher" not in row.last_seen.captures
