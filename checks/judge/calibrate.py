"""Choosing the judge's operating point from labelled data, by a FN:FP cost ratio.

Input: for each labelled item, every perspective's verdict (and whether its evidence was
hallucinated) and the truth (``good`` or ``bad``). For each non-empty set of perspectives
and each divergence threshold, the decision rule of :func:`referee.checks.judge.core.decide`
is replayed: decided items are PASS or REJECT, the rest go to a person. The cost of an
operating point is

    cost_ratio × FN  +  FP  +  review_cost × UNCLEAR

where a false negative is bad work passed, a false positive good work rejected, and every
UNCLEAR item costs a person's attention. The cheapest point wins; ties go to fewer
perspectives (fewer model calls), then to the higher threshold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

THRESHOLDS = (0.6, 0.67, 0.75, 0.8, 1.0)


@dataclass(frozen=True)
class Labelled:
    verdicts: dict[str, str]  # perspective -> PASS / REJECT
    hallucinated: frozenset[str]  # perspectives whose evidence was not in the text
    truth: Literal["good", "bad"]


@dataclass(frozen=True)
class Point:
    perspectives: tuple[str, ...]
    threshold: float
    tp: int  # bad work rejected
    tn: int  # good work passed
    fp: int  # good work rejected
    fn: int  # bad work passed
    unclear: int
    cost: float

    @property
    def decided(self) -> int:
        return self.tp + self.tn + self.fp + self.fn

    @property
    def accuracy(self) -> float | None:
        return (self.tp + self.tn) / self.decided if self.decided else None


def outcome(item: Labelled, perspectives: Sequence[str], threshold: float) -> str:
    """PASS, REJECT or UNCLEAR, by the judge's own rule."""
    if any(p in item.hallucinated for p in perspectives):
        return "UNCLEAR"
    counts = Counter(item.verdicts[p] for p in perspectives)
    verdict, count = counts.most_common(1)[0]
    if len(counts) > 1 and count * 2 == len(perspectives):
        return "UNCLEAR"  # a tie is never broken
    return verdict if count / len(perspectives) >= threshold else "UNCLEAR"


def evaluate(
    items: Sequence[Labelled],
    perspectives: Sequence[str],
    threshold: float,
    cost_ratio: float,
    review_cost: float,
) -> Point:
    tally = Counter()
    for item in items:
        result = outcome(item, perspectives, threshold)
        if result == "UNCLEAR":
            tally["unclear"] += 1
        elif item.truth == "bad":
            tally["tp" if result == "REJECT" else "fn"] += 1
        else:
            tally["tn" if result == "PASS" else "fp"] += 1
    cost = cost_ratio * tally["fn"] + tally["fp"] + review_cost * tally["unclear"]
    return Point(
        tuple(perspectives),
        threshold,
        tally["tp"],
        tally["tn"],
        tally["fp"],
        tally["fn"],
        tally["unclear"],
        cost,
    )


def operating_points(
    items: Sequence[Labelled],
    perspectives: Iterable[str],
    *,
    cost_ratio: float = 3.0,
    review_cost: float = 0.5,
    thresholds: Sequence[float] = THRESHOLDS,
) -> list[Point]:
    """Every (perspective set, threshold), cheapest first."""
    names = list(perspectives)
    points = []
    seen: set[tuple[tuple[str, ...], tuple[int, ...]]] = set()
    for size in range(1, len(names) + 1):
        for subset in combinations(names, size):
            for threshold in thresholds:
                point = evaluate(items, subset, threshold, cost_ratio, review_cost)
                # thresholds that decide exactly alike are one operating point
                key = (subset, (point.tp, point.tn, point.fp, point.fn, point.unclear))
                if key in seen:
                    continue
                seen.add(key)
                points.append(point)
    points.sort(key=lambda p: (p.cost, len(p.perspectives), -p.threshold))
    return points
