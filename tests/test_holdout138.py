"""Readings learned from held-out set ED (tests/scenarios/real-holdout138: logs people committed to
public repositories, measured before any change):

- a source's last lines are read whole when the file does not end with a newline (its last,
  unterminated line used to come as a chunk of its own and stand for the whole tail), and a
  step line with no clock of its own takes the time of the stamped line before it, so a run a
  person stopped with Ctrl-C while it was still making steps reads as a deliberate stop;
- a log pasted as comments in a script ("# [rank0]: ...") is read behind its comment marker,
  as a Markdown quote is;
- the line of code a traceback frame was running (the line Python prints under the frame) is
  read for what the frame did: opening a checkpoint path is checkpoint code;
- a container that lost its GPUs ("Failed to initialize NVML: Unknown Error").
"""

from __future__ import annotations

import rankdoctor
from rankdoctor.ingest.prefix import Dialect, parse_prefix, sniff_dialect
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import scan_text

from .conftest import SCENARIOS

ED = SCENARIOS / "real-holdout138"


def test_a_run_stopped_with_ctrl_c_while_it_made_steps_is_healthy_with_or_without_a_final_newline(tmp_path):
    log = ED / "p3-itpn-clip-4gpu-deepspeed-ctrl-c" / "log.txt"
    raw = log.read_bytes()
    assert not raw.endswith(b"\n")  # as the author committed it
    assert rankdoctor.diagnose(log).verdict == "no-failure-found"
    ended = tmp_path / "with-newline.log"
    ended.write_bytes(raw + b"\n")
    assert rankdoctor.diagnose(ended).verdict == "no-failure-found"
    # the same log cut where the steps stop 40 lines before the interrupt (nothing reported a
    # step for about three seconds, many times its cadence): a hang someone ended
    lines = raw.decode("utf-8").split("\n")
    stop = next(i for i, ln in enumerate(lines) if "Received Signals.SIGINT death signal" in ln)
    hung = tmp_path / "hung.log"
    # drop the step lines of the last ~1.5 s and stamp the interrupt a minute later
    kept = lines[:stop - 20] + [lines[stop].replace("02:14:29.897000", "02:15:29.897000")] + lines[stop + 1:]
    hung.write_text("\n".join(kept), encoding="utf-8")
    assert rankdoctor.diagnose(hung).verdict != "no-failure-found"


def test_the_tail_of_a_file_without_a_final_newline_is_its_last_lines(tmp_path):
    """Each source's tail facts (its last step, the cadence of its steps) come from its last
    lines whether or not the file ends with a newline."""
    body = "".join(f"2024-07-24 02:14:{s:02d},000 INFO step {s} loss 1.0\n" for s in range(10))
    kb = load_kb()

    def tails(text: str) -> list:
        return sorted((f.fact, f.line) for f in scan_text(kb, text).tails if f.fact in ("cadence", "last-step"))

    assert tails(body) == tails(body + "```") == [("cadence", 10), ("last-step", 10)]
    path = tmp_path / "no-newline.log"
    path.write_text(body + "done", encoding="utf-8")
    d = rankdoctor.diagnose(path)
    assert d.verdict == "no-failure-found"


def test_a_log_pasted_as_script_comments_keeps_its_rank_prefixes():
    lines = ["# [rank0]: Traceback (most recent call last):", "# [rank0]:   File \"train.py\", line 3, in <module>",
             "# [rank0]: RuntimeError: CUDA error: named symbol not found", "#   The detected CUDA version (11.8) mismatches"]
    d = sniff_dialect(lines)
    assert d.quote
    a, at = parse_prefix(lines[2], d)
    assert a.rank == 0 and lines[2][at:].startswith("RuntimeError")
    # gdb's "#0  0x..." frames and a Markdown heading are not comment markers before a prefix
    assert not sniff_dialect(["#0  0x00007f in raise ()", "#1  0x00007f in abort ()", "#2  0x00007f in main ()"]).quote
    a, _ = parse_prefix("# Results", Dialect())
    assert a.rank is None
    diag = rankdoctor.diagnose(ED / "p4-sam2-ddp-cuda-named-symbol" / "log.txt")
    assert diag.diagnoses[0].klass == "nccl-cuda-version"
    # the commented-out "[rank0]:" lines are rank 0's (whether the answer names the rank is the
    # weighing's business: DeepSpeed's op-builder line beside it names none)
    assert any(e.rank == 0 and "named symbol not found" in e.text for e in diag.weighing.att.events)


def test_a_frame_s_code_line_that_opens_a_checkpoint_is_checkpoint_code(tmp_path):
    log = ED / "p5-slowfast-mvitv2-4gpu-test-empty-ckpt-path" / "log.txt"
    assert rankdoctor.diagnose(log).diagnoses[0].klass == "checkpoint-error"
    # the same FileNotFoundError opening a data file is no checkpoint error
    other = tmp_path / "data.log"
    other.write_text(log.read_text(encoding="utf-8").replace("pathmgr.open(cfg.TEST.CHECKPOINT_FILE_PATH", "pathmgr.open(cfg.DATA.PATH_TO_LABELS"),
                     encoding="utf-8")
    assert rankdoctor.diagnose(other).diagnoses[0].klass != "checkpoint-error"


def test_a_container_that_lost_its_gpus():
    d = rankdoctor.diagnose(ED / "p3-mae-submitit-pretrain-nvml-gpu-lost" / "log.txt")
    top = d.diagnoses[0]
    assert (top.entry, top.klass) == ("container-lost-gpu-access", "gpu-hardware")
