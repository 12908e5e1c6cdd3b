"""The engine: attribution, the rank table, hypotheses, features, scoring, presentation.

Called as a function, this package is the Python API's ``rankdoctor.diagnose(paths, fr=None)``
(see rankdoctor.api): ``import rankdoctor`` makes ``rankdoctor.diagnose`` this package, so the
package itself answers the call.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..api import diagnose

        return diagnose(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
