"""The two sides every guard rule reads of one file: its text at the baseline and its
current facts (kept between checks of an open document), and the functions that are
new or changed between them."""

from __future__ import annotations

from referee.checks.guard.live import Baseline, CurrentFacts, FunctionText, baseline
from referee.checks.rule import Context


def base_of(ctx: Context) -> Baseline | None:
    """The file's baseline and what the guard derives from it, computed once per text."""
    guard = ctx.guard
    if guard is None or guard.baseline is None:
        return None
    return baseline(ctx.source.path, ctx.relpath, ctx.source.kind, guard.baseline)


def current_of(ctx: Context) -> CurrentFacts:
    """The current text's facts: kept between checks of an open document."""
    store = ctx.store if ctx.store is not None else ctx.memo
    current = store.get("guard-current")
    if current is None:
        current = store["guard-current"] = CurrentFacts()
    return current  # type: ignore[return-value]


def functions(ctx: Context) -> list[FunctionText]:
    """Every function of the file (nested ones and methods included), in file order."""
    return current_of(ctx).functions(ctx.source, ctx.relpath, ctx.memo.get("chunks"))  # type: ignore[arg-type]


def new_functions(ctx: Context) -> list[FunctionText]:
    """Functions (nested ones and methods included) that are new or whose body changed."""
    cached = ctx.memo.get("guard-new-functions")
    if cached is None:
        base = base_of(ctx)
        before = base.bodies if base is not None else frozenset()
        cached = ctx.memo["guard-new-functions"] = [
            fn for fn in functions(ctx) if (fn.name, fn.squashed) not in before
        ]
    return cached  # type: ignore[return-value]
