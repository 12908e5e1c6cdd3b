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
