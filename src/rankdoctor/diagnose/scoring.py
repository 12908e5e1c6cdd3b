"""The one place where evidence is weighed.

Every hypothesis of a run is described by the named features of ``features.py``. Its
score is the weighted sum of those features; the scores of all hypotheses of the run,
together with a fixed score for "none of these" (the ``null`` weight), go through a
softmax, so each hypothesis gets a probability and rival hypotheses share it:

    score(h) = sum_i w_i * f_i(h)
    P(h)     = exp(score(h)) / (exp(null) + sum_h' exp(score(h')))

The weights are data (``weights.json``), fitted by ``make fit`` (``rankdoctor.fit``) on the
labelled scenarios as a conditional-logit model (maximum likelihood of the labelled
answer among the run's hypotheses, L2-regularised), and the verdict threshold is chosen
from the cross-validated reliability table so that confident answers are rarely wrong.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .features import FEATURES

SCHEMA = "rankdoctor.weights/v1"


@dataclass(frozen=True)
class Weights:
    features: dict[str, float]
    null: float
    threshold: float  # P(class of the top answer) from which a run is "diagnosed"
    rank_share: float  # share of an entry's probability a rank needs to be named
    meta: dict

    def score(self, f: dict[str, float]) -> float:
        w = self.features
        return sum(w.get(k, 0.0) * v for k, v in f.items() if v)

    def contributions(self, f: dict[str, float]) -> list[tuple[str, float]]:
        """Each feature's part of the score, largest first (for ``-v``)."""
        parts = [(k, self.features.get(k, 0.0) * v) for k, v in f.items() if v and self.features.get(k, 0.0)]
        return sorted(parts, key=lambda kv: -abs(kv[1]))

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "features": self.features, "null": self.null, "threshold": self.threshold,
                "rank_share": self.rank_share, **self.meta}


def posterior(scores: list[float], null: float) -> tuple[list[float], float]:
    """Softmax over the hypotheses' scores and the "none of these" score."""
    top = max([null, *scores])
    ex = [math.exp(s - top) for s in scores]
    ex_null = math.exp(null - top)
    z = ex_null + sum(ex)
    return [e / z for e in ex], ex_null / z


@lru_cache(maxsize=1)
def default_weights() -> Weights:
    text = resources.files("rankdoctor.diagnose").joinpath("weights.json").read_text(encoding="utf-8")
    return weights_from_json(json.loads(text))


def weights_from_json(data: dict) -> Weights:
    if data.get("schema") != SCHEMA:
        raise ValueError(f"weights: expected schema {SCHEMA}")
    feats = {k: float(v) for k, v in data["features"].items() if k in FEATURES}
    meta = {k: v for k, v in data.items() if k not in ("schema", "features", "null", "threshold", "rank_share")}
    return Weights(feats, float(data["null"]), float(data["threshold"]), float(data.get("rank_share", 0.5)), meta)
