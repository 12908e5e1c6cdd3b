"""Readings learned from held-out set EB (tests/scenarios/real-holdout136: logs people committed to
public repositories, measured before any change): the CUDA driver API's name for an allocation
failure (numba's "Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY") is a GPU out-of-memory
error, and an exception the program raised from its own check of a value that went NaN or Inf
("ValueError: Observations cannot be NAN") is a numeric divergence."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

EB = SCENARIOS / "real-holdout136"


def test_the_driver_api_s_out_of_memory_is_a_gpu_oom():
    d = rankdoctor.diagnose(EB / "p2-mmdet3d-pointpillars-aiodrive-3gpu-numba-oom" / "log.txt")
    assert d.diagnoses and d.diagnoses[0].klass == "cuda-oom"


def test_an_exception_from_the_program_s_own_nan_check_is_a_divergence(tmp_path):
    log = EB / "p1-leatherback-rsl-rl-nan-observations" / "log.txt"
    assert rankdoctor.diagnose(log).diagnoses[0].klass == "nan-divergence"
    # the same exception about something else is no divergence
    other = edited_copy(tmp_path, log, lambda _, ln: True)
    other.write_text(other.read_text(encoding="utf-8").replace("Observations cannot be NAN", "Observations cannot be empty"),
                     encoding="utf-8")
    assert rankdoctor.diagnose(other).diagnoses[0].klass != "nan-divergence"
