"""``referee serve`` with every fix marked safe.

No released rule has a safe fix yet (REF112 and REF115 are unsafe), so the
``source.fixAll.referee`` action, which applies safe fixes only, has nothing to offer
with the real rules. This launcher runs the real server unchanged except that the
findings it computes carry safe fixes, so the tests can drive fix-all end to end.
"""

from __future__ import annotations

from typing import Any

import referee.server.lsp as lsp
from referee.checks.models import Finding

_check_source = lsp.check_source


def _all_safe(*args: Any, **kwargs: Any) -> list[Finding]:
    return [
        f.model_copy(update={"fix": f.fix.model_copy(update={"applicability": "safe"})})
        if f.fix is not None
        else f
        for f in _check_source(*args, **kwargs)
    ]


if __name__ == "__main__":
    lsp.check_source = _all_safe
    lsp.serve()
