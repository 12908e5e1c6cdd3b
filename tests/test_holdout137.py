"""Readings learned from held-out set EC (tests/scenarios/real-holdout137: logs people committed to
public repositories, measured before any change): TensorPipe's failure in its InfiniBand transport
(torch.distributed.rpc on an EFA node) is a transport problem, not a worker's crash, and
TensorFlow's allocator failing on a GPU inside a PyTorch job is a GPU out-of-memory error."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS, edited_copy

EC = SCENARIOS / "real-holdout137"


def test_tensorpipe_s_ibv_transport_failure_is_a_transport_problem(tmp_path):
    log = EC / "p3-tensorpipe-ibv-efa" / "log.txt"
    assert rankdoctor.diagnose(log).diagnoses[0].klass == "nccl-network"
    # the same traceback with an error of the program's own is a crash
    other = edited_copy(tmp_path, log, lambda _, ln: True)
    other.write_text(other.read_text(encoding="utf-8").replace('In operator() at tensorpipe/common/ibv.h:172 "": Operation not supported',
                                                                "model config has no attribute 'pipeline_stages'"), encoding="utf-8")
    assert rankdoctor.diagnose(other).diagnoses[0].klass != "nccl-network"


def test_tensorflow_s_gpu_allocator_failure_is_a_gpu_oom():
    d = rankdoctor.diagnose(EC / "p3-ps-worker-tf-oom" / "log.txt")
    assert d.diagnoses[0].klass == "cuda-oom"
    kb = load_kb()
    host = "OOM when allocating tensor with shape[500,512] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n"
    assert not [e for e in iter_events(scan_text(kb, host)) if e.entry == "cuda-out-of-memory"]
