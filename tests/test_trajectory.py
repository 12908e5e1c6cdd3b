"""A run's numbers read across lines (trajectory.py): a loss jump, a loss-scale collapse."""

from __future__ import annotations

import typing

from rankdoctor import claims
from rankdoctor.kb.model import Signature
from rankdoctor.trajectory import DETECTORS, numeric_jump

from .conftest import SCENARIOS


def _it(step: int, loss: float, scale: float) -> str:
    # the shape of a Megatron iteration line (real ones: tests/scenarios/real-holdout37/bigscience-*)
    return (f" iteration {step:8d}/  159576 | consumed samples: {step * 96:12d} | learning rate: 6.000E-05 | "
            f"global batch size:    96 | lm loss: {loss:E} | loss scale: {scale} | grad norm: 1.0 |")


def test_every_detector_is_a_computed_signature_kind():
    literal = next(a for a in typing.get_args(Signature.model_fields["computed"].annotation) if a is not type(None))
    assert set(typing.get_args(literal)) == set(DETECTORS) | set(claims.DETECTORS)


def test_a_loss_jump_past_the_start_of_training():
    lines = [_it(7000, 6.44, 2048.0), " validation loss at iteration 7000 | lm loss value: 7.174200E+00 |", _it(7010, 11.42, 2048.0)]
    j = numeric_jump(lines)
    assert j is not None and j.detector == "loss-jump" and j.index == 2 and "iteration 7010" in j.detail


def test_the_start_of_training_and_a_falling_loss_are_not_jumps():
    # the loss scale calibrating itself down and the loss moving fast in the first iterations
    start = [_it(10, 11.0, 4294967296.0), _it(20, 10.9, 65536.0), _it(30, 19.0, 32768.0)]
    assert numeric_jump(start) is None
    assert numeric_jump([_it(7010, 11.42, 2048.0), _it(7220, 7.16, 2048.0)]) is None
    assert numeric_jump([_it(5000, 2.5, 65536.0)]) is None


def test_a_loss_scale_collapse_within_a_few_reports():
    scales = [1048576.0, 1048576.0, 524288.0, 262144.0, 131072.0]
    lines = [_it(17060 + i, 4.4, s) for i, s in enumerate(scales)]
    j = numeric_jump(lines)
    assert j is not None and j.detector == "loss-scale-collapse" and j.index == 4


def test_real_divergences_are_read(kb):
    import rankdoctor

    for rel in ("real-holdout37/bigscience-tr8-104b-exp1-lossjump-nan", "real-holdout40/bigscience-tr1-13b-loss-spike-loss-scale"):
        d = rankdoctor.diagnose([str(SCENARIOS / rel / "log.txt")])
        assert d.diagnoses and d.diagnoses[0].klass == "nan-divergence", rel


def test_the_report_says_what_jumped():
    import rankdoctor

    d = rankdoctor.diagnose([str(SCENARIOS / "real-holdout40/bigscience-tr1-13b-loss-spike-loss-scale/log.txt")])
    top = d.to_json()["diagnoses"][0]
    assert top["entry"] == "loss-spike-divergence"
    assert "lm loss 2.76813 -> 7.34371 at iteration 29050" in top["root_cause"]


def _rec(loss: float, grad: str) -> str:
    # the shape of transformers' Trainer log record (real ones: tests/scenarios/real-holdout32/ms-swift-2280-*)
    return f"{{'loss': {loss}, 'grad_norm': {grad}, 'learning_rate': 1.9e-05, 'epoch': 0.42}}"


def test_a_nonfinite_grad_norm_with_a_loss_jump_in_a_trainer_record():
    j = numeric_jump([_rec(1.8013, "37.75"), _rec(663.5659, "nan")])
    assert j is not None and j.detector == "nonfinite-grad-loss-jump" and j.index == 1 and "grad_norm nan" in j.detail


def test_a_nonfinite_grad_norm_alone_is_an_fp16_skip():
    assert numeric_jump([_rec(1.2034, "0.8812"), _rec(1.1871, "nan"), _rec(1.1902, "0.91")]) is None
    assert numeric_jump([_rec(1.2034, "nan")]) is None  # no record before it to compare with
    assert numeric_jump([_rec(1.2, "0.9"), _rec(2.5, "1.3")]) is None  # a jump with a finite norm: fine-tuning noise


def test_the_first_records_of_fp16_training_need_a_large_jump():
    # at the start the loss scaler calibrates itself (overflow steps print a NaN gradient norm)
    # and the loss is noisy: there only a jump of an order of magnitude counts
    first = "{{'loss': {}, 'grad_norm': nan, 'learning_rate': 1e-06, 'epoch': 0.0}}"
    assert numeric_jump([first.format(2.1), first.format(3.4)]) is None
    assert numeric_jump([first.format(1.8013), first.format(663.5659)]) is not None
    j = numeric_jump([_rec(1.8013, "37.75"), _rec(663.5659, "nan")])
    assert j is not None and j.detector == "nonfinite-grad-loss-jump"
    later = [_rec(1.4, "3.1")] * 4 + [_rec(2.23, "NaN")]
    assert numeric_jump(later) is not None
    # a record that says where training is: ms-swift's global_step, the Trainer's epoch
    far = '{"loss": 2.23302879, "grad_norm": NaN, "epoch": 0.7497623, "global_step/max_steps": "8280/11043"}'
    near = '{"loss": 3.4, "grad_norm": NaN, "epoch": 0.0, "global_step/max_steps": "4/11043"}'
    assert numeric_jump(['{"loss": 1.394207, "grad_norm": 4.16, "global_step/max_steps": "8275/11043"}', far]) is not None
    assert numeric_jump(['{"loss": 2.1, "grad_norm": NaN, "global_step/max_steps": "2/11043"}', near]) is None


def test_a_spike_the_run_recovered_from_is_not_a_divergence():
    # a large run's loss jumps and comes back within tens of iterations (BigScience tr11's first spike)
    spike = [_it(31218, 2.345, 1.0), _it(31219, 5.098, 1.0), _it(31220, 3.49, 1.0), _it(31250, 2.2157, 1.0)]
    assert numeric_jump(spike) is None
    assert numeric_jump(spike[:3]) is not None  # still high at the last report: it may be diverging
    assert numeric_jump([_rec(1.4, "3.1")] * 4 + [_rec(2.23, "nan"), _rec(1.41, "2.9")]) is None
