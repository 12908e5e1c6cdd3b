from __future__ import annotations

import json

from ..diagnose.model import Diagnosis


def render_json(d: Diagnosis) -> str:
    return json.dumps(d.to_json(), indent=2, ensure_ascii=False)
