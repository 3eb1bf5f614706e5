"""``.referee/certificates.jsonl``: the append-only ledger of certificates.

Meant to be committed: CI's guard reads it. Reading tolerates a corrupt or truncated
line (it is reported and skipped, the rest is kept); writing appends one line under an
exclusive lock and fsyncs it, so two writers (editor and CLI) never lose a record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from referee.checks.atomic import append_json_line, json_lines
from referee.checks.models import Certificate

LEDGER = Path(".referee") / "certificates.jsonl"


def certificate_id(fields: dict[str, Any]) -> str:
    """The id a certificate with these fields must carry: a hash of everything else."""
    body = {k: v for k, v in fields.items() if k != "id"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def normalized_text_hash(text: str) -> str:
    return hashlib.sha256("".join(text.split()).encode("utf-8")).hexdigest()


def test_sha256(text: str, relpath: str, test_id: str, new_value: str) -> str | None:
    """The ``test_sha256`` a certificate for ``test_id`` needs once the test file reads
    ``text``: the hash of the assertion statement whose expected value is now
    ``new_value``, or, for a parametrized case, of that case as Python prints it (what the
    guard's REF309 checks). None when the test or such an assertion is not there."""
    import ast

    from referee.checks.guard.facts import canonical, test_facts
    from referee.checks.source import SourceFile

    facts = test_facts(SourceFile(relpath, text), relpath).get(test_id.split("[", 1)[0])
    if facts is None:
        return None
    value = canonical(new_value)
    for assertion in facts.assertions:
        if assertion.expected == value:
            return normalized_text_hash(assertion.text)
    for case in facts.parametrize_values:
        try:
            node = ast.parse(case, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            continue
        items = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        if any(canonical(ast.unparse(item)) == value for item in items):
            return normalized_text_hash(case)
    return None


@dataclass
class Ledger:
    certificates: list[Certificate] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "line N: what is wrong"


def read(root: Path) -> Ledger:
    """Every valid certificate under ``root``; bad lines become problems, never errors."""
    path = root / LEDGER
    ledger = Ledger()
    for number, line in json_lines(path, ledger.problems) or []:
        try:
            data = json.loads(line)
            certificate = Certificate.model_validate(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            ledger.problems.append(f"line {number}: not valid JSON (truncated write?)")
            continue
        except ValidationError as exc:
            ledger.problems.append(f"line {number}: {exc.errors()[0]['msg']}")
            continue
        if certificate.id != certificate_id(certificate.model_dump(mode="json")):
            ledger.problems.append(
                f"line {number}: certificate {certificate.id} does not match its content "
                "(edited by hand?); ignored"
            )
            continue
        ledger.certificates.append(certificate)
    return ledger


def append(root: Path, fields: dict[str, Any]) -> Certificate:
    """Add a certificate (its id is computed here) durably, under an exclusive lock."""
    fields = {**fields, "id": ""}
    certificate = Certificate.model_validate(fields)
    data = certificate.model_dump(mode="json")
    data["id"] = certificate_id(data)
    certificate = Certificate.model_validate(data)
    append_json_line(root / LEDGER, data)
    return certificate
