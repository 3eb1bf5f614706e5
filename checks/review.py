"""L3: the human review queue, ``.referee/review.jsonl`` in the workspace.

Items arrive from the judge (perspectives disagreed, or quoted evidence that is not in the
file), from audit sampling (auto-passed items a person should look at), and from
arbitration (no independent truth). A person accepts or rejects each one.

The file is append-only JSON lines: a record is either an item or a decision about an item
id. An item's id hashes its kind, path, subject and content, so the same content is queued
once and a decision sticks until the content changes — then a new id, a new item. Appends
happen under an exclusive lock and are fsynced; a truncated or corrupt line is reported and
skipped, never fatal, never rewritten.

Audit sampling is deterministic: an item is audited when a hash of its content falls below
its audit rate, so re-checking the same content asks for the same audits.
"""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import json
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from referee.checks.atomic import append_json_line, json_lines
from referee.checks.models import ReviewItem

QUEUE = Path(".referee") / "review.jsonl"


def item_id(kind: str, path: str, subject: str, content_sha256: str) -> str:
    raw = "\0".join((kind, path, subject, content_sha256))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def new_item(
    *,
    kind: Literal["judge", "audit", "arbitration", "execution"],
    path: str,
    line: int,
    subject: str,
    content_sha256: str,
    title: str,
    reasons: list[str] | tuple[str, ...] = (),
    evidence: list[str] | tuple[str, ...] = (),
) -> ReviewItem:
    return ReviewItem(
        id=item_id(kind, path, subject, content_sha256),
        kind=kind,
        path=path,
        line=max(1, line),
        subject=subject,
        content_sha256=content_sha256,
        title=title,
        reasons=tuple(reasons),
        evidence=tuple(evidence),
        created=now(),
    )


@dataclass
class Queue:
    """Every item ever queued (latest decision applied), and lines that could not be read."""

    items: dict[str, ReviewItem] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False  # the file is there but could not be read at all

    def pending(self) -> list[ReviewItem]:
        return [item for item in self.items.values() if item.decision is None]

    def decided(self) -> list[ReviewItem]:
        return [item for item in self.items.values() if item.decision is not None]

    def find(self, prefix: str) -> ReviewItem:
        """The item whose id starts with ``prefix``; KeyError naming the problem."""
        matches = [item for key, item in self.items.items() if key.startswith(prefix)]
        if not matches:
            raise KeyError(f"no review item {prefix!r}")
        if len(matches) > 1:
            raise KeyError(f"{prefix!r} matches {len(matches)} items; give more of the id")
        return matches[0]


def read(root: Path) -> Queue:
    path = root / QUEUE
    queue = Queue()
    lines = json_lines(path, queue.problems)
    if lines is None:
        queue.unreadable = True
        return queue
    for number, line in lines:
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
        except (json.JSONDecodeError, UnicodeDecodeError):
            queue.problems.append(f"{QUEUE}: line {number}: not valid JSON (truncated write?)")
            continue
        except ValueError:
            queue.problems.append(f"{QUEUE}: line {number}: not a JSON object")
            continue
        if record.get("type") == "decision":
            item = queue.items.get(str(record.get("id")))
            decision = record.get("decision")
            if item is None:
                queue.problems.append(f"{QUEUE}: line {number}: decision for an unknown item")
                continue
            if decision not in ("accepted", "rejected"):
                queue.problems.append(
                    f"{QUEUE}: line {number}: decision {decision!r} is neither "
                    "'accepted' nor 'rejected'"
                )
                continue
            queue.items[item.id] = item.model_copy(
                update={
                    "decision": record["decision"],
                    "decided_by": record.get("by"),
                    "decided": record.get("at"),
                }
            )
            continue
        record.pop("type", None)
        try:
            item = ReviewItem.model_validate(record)
        except ValidationError as exc:
            queue.problems.append(f"{QUEUE}: line {number}: {exc.errors()[0]['msg']}")
            continue
        queue.items.setdefault(item.id, item)
    return queue


def _append(root: Path, record: dict[str, Any]) -> None:
    append_json_line(root / QUEUE, record)


def submit(root: Path, item: ReviewItem) -> tuple[ReviewItem, bool]:
    """Queue ``item`` unless the same content is already there; (the item, whether new).

    An item already decided comes back with its decision: the person's answer sticks.
    """
    existing = read(root).items.get(item.id)
    if existing is not None:
        return existing, False
    _append(root, {"type": "item", **item.model_dump(mode="json")})
    return item, True


def decide(
    root: Path, prefix: str, decision: Literal["accepted", "rejected"], by: str | None = None
) -> ReviewItem:
    """Record a person's decision about the item whose id starts with ``prefix``."""
    item = read(root).find(prefix)
    who = by or _user()
    at = now()
    _append(root, {"type": "decision", "id": item.id, "decision": decision, "by": who, "at": at})
    return item.model_copy(update={"decision": decision, "decided_by": who, "decided": at})


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


# ------------------------------------------------------------------------- auditing


def risk_for(path: str, risk: dict[str, float]) -> float:
    """The risk factor of the first glob in ``risk`` that matches ``path`` (default 1)."""
    for pattern, factor in risk.items():
        if fnmatch(path, pattern) or fnmatch(path, f"*/{pattern}"):
            return factor
    return 1.0


def audit_rate(base: float, risk: float, confidence: float) -> float:
    """base × risk / confidence^1.5, clipped to [0, 1]; no confidence means always audit."""
    if confidence <= 0:
        return 1.0
    return min(1.0, max(0.0, base * risk / confidence**1.5))


def sampled(content_sha256: str, rate: float) -> bool:
    """Deterministic sampling: the same content at the same rate gives the same answer."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    draw = int(hashlib.sha256(("audit:" + content_sha256).encode()).hexdigest()[:15], 16)
    return draw / 16**15 < rate
