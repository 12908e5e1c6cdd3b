"""The guard's comparison on published states (no processes): gaps, ties, ranks ahead."""

from rankdoctor.guard.compare import find_divergence

A = "all_reduce(float32[16]) at train.py:10"
B = "all_reduce(float32[16]) at train.py:20"


def state(rank, n, window, base=1, done=None, busy=None, t=100.0, since=None):
    return {"rank": rank, "t": t, "done": done, "ready": True, "groups": {"0": {
        "desc": "default_pg", "n": n, "base": base, "since": t if since is None else since, "busy": busy, "w": window}}}


def chain(texts, start=1):
    return [[start + i, f"h{start + i}-{t}", t] for i, t in enumerate(texts)]


def test_a_rank_whose_record_has_a_gap_is_not_a_false_alarm():
    states = {0: state(0, 5, chain([A] * 5)), 1: state(1, 5, chain([A, A], start=4), base=4)}
    assert find_divergence(states, 2, 100.0, 30.0) is None


def test_a_different_call_site_is_found_across_a_gap():
    states = {0: state(0, 5, chain([A] * 5)), 1: state(1, 5, chain([B, A], start=4), base=4)}
    line = find_divergence(states, 2, 100.0, 30.0).line()
    assert "at collective #4: rank 1 issued all_reduce(float32[16]) at train.py:20" in line


def test_the_minority_is_named_and_the_majority_is_listed():
    same = chain([A, A, A])
    states = {0: state(0, 3, same), 1: state(1, 3, chain([A, A, B])), 2: state(2, 3, same)}
    line = find_divergence(states, 3, 100.0, 30.0).line()
    assert line.startswith("rankdoctor guard: collective desync in group default_pg at collective #3: rank 1 issued")
    assert line.endswith("ranks 0,2 issued all_reduce(float32[16]) at train.py:10")


def test_a_rank_ahead_is_reported_only_once_the_others_cannot_catch_up():
    ahead = state(1, 5, chain([A] * 5), busy=1.0)
    computing = state(0, 4, chain([A] * 4))
    assert find_divergence({0: computing, 1: ahead}, 2, 100.0, 30.0) is None
    exited = state(0, 4, chain([A] * 4), done="exited")
    line = find_divergence({0: exited, 1: ahead}, 2, 100.0, 30.0).line()
    assert "rank 0 issued nothing after collective #4" in line and "[exited]" in line
    idle = state(0, 4, chain([A] * 4), since=60.0)  # alive, no new collective for 40 s (stall 30 s)
    assert "[idle]" in find_divergence({0: idle, 1: ahead}, 2, 100.0, 30.0).line()
    gone = state(0, 4, chain([A] * 4), t=80.0)  # no state published for 20 s: killed
    assert "[stopped publishing]" in find_divergence({0: gone, 1: ahead}, 2, 100.0, 30.0).line()
