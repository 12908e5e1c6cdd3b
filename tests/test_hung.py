"""diagnose --hung: a job known to have hung whose logs show no failure (real logs from public
issue threads in tests/scenarios). The logs are read as ending where it hung; a failure the logs
do show is read exactly as without the flag."""

from __future__ import annotations

import json

import rankdoctor

from .conftest import SCENARIOS, run_cli

NCCLTESTS_P2P = SCENARIOS / "real-holdout20" / "nccltests-117-rtx4090-p2p-hang" / "log.txt"  # init, a Broadcast call, nothing
K8S_LO = SCENARIOS / "real-holdout15" / "kubeflow-eks-nccl-socket-lo-hang" / "log.txt"  # NET/Socket : Using [0]lo ...
WITH_FAILURE = SCENARIOS / "real-holdout20" / "horovod-666-socket-ifname-connrefused"  # NCCL WARN lines, said to freeze


def test_without_the_flag_a_silent_hang_is_no_failure_and_with_it_a_p2p_suspect():
    plain = run_cli("diagnose", str(NCCLTESTS_P2P), "--format", "json")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["verdict"] == "no-failure-found"

    hung = run_cli("diagnose", str(NCCLTESTS_P2P), "--hung", "--format", "json")
    doc = json.loads(hung.stdout)
    # the top answer is the usual cause of a job that never finishes its first collective, but
    # no line of the log names it: it is stated as a suspect (inconclusive), never as a diagnosis
    assert hung.returncode == 3, hung.stderr
    assert doc["verdict"] == "inconclusive"
    top = doc["diagnoses"][0]
    assert (top["class"], top["initiating_ranks"]) == ("nccl-p2p-topology", [])
    assert "NCCL_P2P_DISABLE=1" in json.dumps(top["fix"]) + json.dumps(top["verify"])
    # the next evidence to take while it still hangs: every rank's stack
    assert any("py-spy dump --pid" in m and "--hung" in m for m in top["missing"]), top["missing"]
    text = run_cli("diagnose", str(NCCLTESTS_P2P), "--hung").stdout.decode()
    assert "no line shows a failure: read as a hang" in text and "said to have hung (--hung)" in text, text[:2000]


def test_the_interface_nccl_picked_is_the_evidence_of_a_network_hang():
    d = rankdoctor.diagnose(str(K8S_LO), hung=True).to_json()
    top = d["diagnoses"][0]
    assert top["entry"] == "nccl-socket-unroutable-interface-hang", [(x["entry"], x["confidence"]) for x in d["diagnoses"]]
    assert top["class"] == "nccl-network"
    assert any("NET/Socket : Using [0]lo:127.0.0.1" in e["text"] for e in top["evidence"]), top["evidence"]
    assert rankdoctor.diagnose(str(K8S_LO)).to_json()["verdict"] == "no-failure-found"


def test_a_failure_the_logs_show_is_read_as_without_the_flag():
    plain = rankdoctor.diagnose(str(WITH_FAILURE)).to_json()
    hung = rankdoctor.diagnose(str(WITH_FAILURE), hung=True).to_json()
    assert plain["verdict"] != "no-failure-found"
    assert hung == plain


def test_watch_hung_after_reads_a_silent_job_as_hung(tmp_path):
    """`watch --hung-after 1`: while lines arrive, a silent hang shows no failure; once no input
    has had a line for a second, the diagnosis is diagnose --hung's."""
    import subprocess
    import sys
    import threading
    import time

    from .test_watch import CLI, _reader, stop

    folder = tmp_path / "logs"
    folder.mkdir()
    lines = K8S_LO.read_text().splitlines()
    log = folder / "master-0.log"
    log.write_text(lines[0] + "\n")
    watch = subprocess.Popen([*CLI, "watch", str(folder), "--format", "json", "--hung-after", "1.5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list = []
    err: list = []
    readers: list[threading.Thread] = [_reader(watch.stdout, out), _reader(watch.stderr, err)]
    try:
        with open(log, "a") as f:
            for line in lines[1:]:  # the job's start, a line every half second: not silent yet
                time.sleep(0.5)
                f.write(line + "\n")
                f.flush()
        last_line = time.time()
        deadline = time.time() + 30
        while time.time() < deadline and not any("said to have hung" in text for _, text in out):
            time.sleep(0.2)
        with open(log, "a") as f:  # a line again: the job was not hung after all
            f.write(lines[-1] + "\n")
        resumed = time.time()
        while time.time() < deadline and not [1 for t, text in out if t > resumed and "said to have hung" not in text]:
            time.sleep(0.2)
    finally:
        assert stop(watch, readers) == 0, err
    docs = [(t, json.loads(text)) for t, text in out]
    assert docs[0][1]["verdict"] == "no-failure-found", docs[0]
    hung = [(t, d) for t, d in docs if d["diagnoses"] and "said to have hung" in d["diagnoses"][0]["root_cause"]]
    assert hung, [(d["verdict"], [x["entry"] for x in d["diagnoses"][:1]]) for _, d in docs]
    t, d = hung[0]
    assert t >= last_line + 1.4, (t - last_line, d["diagnoses"][0]["entry"])  # not while lines still arrived
    assert d["diagnoses"][0]["entry"] == "nccl-socket-unroutable-interface-hang", d["diagnoses"][0]
    after = [d for t, d in docs if t > resumed]
    assert after and after[0]["verdict"] == "no-failure-found", [(x["verdict"]) for x in after]
