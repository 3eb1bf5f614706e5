"""The L2 judge and its hand-over to L3.

For one file that L0/L1 did not reject, :func:`judge_file`

1. picks the *subjects*: the whole file when a contract gives it a ``task``; otherwise each
   Python function that changed since the baseline (all of them without one) — test
   functions are asked whether they exercise their target, other functions whether they do
   what their name, signature and docstring promise. A subject that already carries an
   L0/L1 error is not judged: the residual only.
2. asks every configured perspective (strict / balanced / lenient by default), with output
   constrained to the JSON schema of :class:`Answer`; the perspectives share the prompt up
   to their one-line instruction, so the model's KV cache is reused between them;
3. checks every quote against the subject's text after whitespace normalisation — a quote
   that is not there marks the verdict hallucinated;
4. decides: no hallucinated evidence and the most common verdict's share at or above the
   divergence threshold → PASS or REJECT (with three perspectives and the default 0.8 this
   means unanimity); anything else → UNCLEAR, queued for a person (L3). Never a majority
   vote below the threshold.
5. samples auto-passed subjects for a human audit (rate = base × risk / confidence^1.5);
6. applies decisions people already made in the review queue: they stick until the content
   changes.

Verdicts are cached on disk by (content hash, model identity, prompt version, perspective),
so an unchanged re-save costs no model call.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import tomllib
from pydantic import ValidationError

from referee.checks import review
from referee.checks.cache import DiskCache
from referee.checks.config import Settings
from referee.checks.configuration import JudgeConfig
from referee.checks.judge.answer import (
    MAX_REASON,
    Answer,
    answer_forcing,
    answer_grammar,
    answer_schema,
)
from referee.checks.judge.backend import (
    Backend,
    BackendError,
    BatchCancelled,
    ChatRequest,
    chat_batch,
)
from referee.checks.judge.worker import WorkerCrashed, WorkerUnavailable
from referee.checks.models import Decision, Finding, JudgeVerdict, Layer, Location, Severity, Span
from referee.checks.progress import IDLE, Cancelled, Work
from referee.checks.pymodule import PythonModule
from referee.checks.source import SourceFile, Unreadable, decode, kind_of, read_bytes

PROMPTS = Path(__file__).with_name("prompts") / "judge-v1.toml"
MAX_SUBJECT_CHARS = 12_000  # longer text is cut (and the cut is said in the prompt)
MAX_SUBJECTS = 24  # per file and run; the rest wait for the next save


# ---------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class Prompts:
    version: str
    texts: dict[str, str]
    perspectives: dict[str, str]


@cache
def prompts() -> Prompts:
    raw = PROMPTS.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    perspectives = data.pop("perspectives")
    version = f"{PROMPTS.stem}-{hashlib.sha256(raw).hexdigest()[:8]}"
    return Prompts(version=version, texts=data, perspectives=perspectives)


def perspective_instructions(config: JudgeConfig) -> dict[str, str]:
    """Name → instruction for every configured perspective; ValueError names an unknown one."""
    known = {**prompts().perspectives, **config.custom_perspectives}
    unknown = [name for name in config.perspectives if name not in known]
    if unknown:
        raise ValueError(
            f"unknown judge perspective(s) {unknown}: built-in ones are "
            f"{sorted(prompts().perspectives)}; declare others in judge.custom-perspectives"
        )
    return {name: known[name] for name in config.perspectives}


# --------------------------------------------------------------------------- subjects


@dataclass(frozen=True)
class Subject:
    """One thing the judge is asked about."""

    kind: Literal["task", "function", "test"]
    name: str  # function name, or the file's path for a task
    text: str
    span: Span
    task: str | None = None

    @property
    def content_sha256(self) -> str:
        body = f"{self.kind}\0{self.name}\0{self.task or ''}\0{self.text}"
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _span_of(source: SourceFile, node) -> Span:
    return source.node_span(node)


def subjects(
    source: SourceFile,
    *,
    task: str | None,
    is_test_file: bool,
    blocked: Sequence[Finding] = (),
    baseline: str | None = None,
    decided: Collection[str] = (),
) -> tuple[list[Subject], list[str]]:
    """The subjects of one file, and why others were left out.

    ``blocked``: the file's L0/L1 error findings (a subject they touch is not judged).
    ``baseline``: the file's text at the baseline; only functions whose text differs from
    it are judged (all of them when there is none).
    """
    notes: list[str] = []
    if task is not None:
        if blocked:
            return [], ["rejected at L0/L1; not judged"]
        lines = source.text.splitlines() or [""]
        span = Span(
            start=Location(line=1, column=1),
            end=Location(line=len(lines), column=len(lines[-1]) + 1),
        )
        return [Subject("task", source.path, source.text, span, task=task)], notes
    if source.kind != "python":
        return [], notes
    if any(f.code == "REF001" for f in blocked):
        return [], ["does not parse; not judged"]
    before = _function_texts(baseline, source.path, is_test_file) if baseline is not None else None
    found: list[Subject] = []
    for subject in _function_subjects(source, is_test_file):
        if any(_inside(f.span, subject.span) for f in blocked):
            notes.append(f"{subject.name}: rejected at L0/L1; not judged")
            continue
        if before is not None and before.get(subject.name) == _normalized(subject.text):
            continue
        if subject.name in decided:
            notes.append(f"{subject.name}: rejected by execution (a counterexample); not read")
            continue
        found.append(subject)
    if len(found) > MAX_SUBJECTS:
        notes.append(f"{len(found) - MAX_SUBJECTS} more functions wait for the next run")
        found = found[:MAX_SUBJECTS]
    return found, notes


def _function_subjects(source: SourceFile, is_test_file: bool) -> Iterator[Subject]:
    """Every function the judge reads in a Python file, by qualified name; a nested function
    is read as part of the one around it."""
    for fn in PythonModule(source, is_test_file).functions:
        if fn.is_nested:
            continue
        qualname = f"{fn.class_.name}.{fn.name}" if fn.class_ else fn.name
        kind: Literal["function", "test"] = "test" if fn.is_test else "function"
        yield Subject(kind, qualname, source.node_text(fn.node), _span_of(source, fn.node))


def _function_texts(text: str, path: str, is_test_file: bool) -> dict[str, str]:
    return {
        subject.name: _normalized(subject.text)
        for subject in _function_subjects(SourceFile(path, text), is_test_file)
    }


def _inside(inner: Span, outer: Span) -> bool:
    return outer.start.line <= inner.start.line <= outer.end.line


# --------------------------------------------------------------------------- evidence

_WS = re.compile(r"\s+")
_WRAPPERS = "`'\"“”‘’«»「」"


def _normalized(text: str) -> str:
    return _WS.sub(" ", text).strip()


def quote_found(quote: str, text: str) -> bool:
    """Whether ``quote`` occurs in ``text``, whitespace runs treated as one space.

    Quotation marks or backticks the model wrapped around an exact quote are forgiven;
    an empty quote is not evidence.
    """
    needle = _normalized(quote)
    haystack = _normalized(text)
    if not needle:
        return False
    if needle in haystack:
        return True
    stripped = needle.strip(_WRAPPERS).strip()
    stripped = stripped.removesuffix("...").removesuffix("…").strip()
    return bool(stripped) and stripped in haystack


# -------------------------------------------------------------------------- the cache


class VerdictCache:
    """One small JSON file per (content, model, prompt version, perspective)."""

    def __init__(self, directory: Path | None, max_bytes: int | None = None) -> None:
        self.directory = directory
        self.store = DiskCache(directory, max_bytes)

    @staticmethod
    def key(subject: Subject, identity: str, version: str, perspective: str, text: str) -> str:
        raw = "\0".join((subject.content_sha256, identity, version, perspective, text))
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def get(self, key: str) -> dict | None:
        data = self.store.get_json(key)
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: dict) -> None:
        self.store.put_json(key, value)


def default_cache(max_bytes: int | None = None) -> VerdictCache:
    from referee.checks.cache import default_cache_dir

    return VerdictCache(default_cache_dir() / "judge", max_bytes)


# ---------------------------------------------------------------------------- judging


@dataclass
class Stats:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def messages_for(subject: Subject, path: str, instruction: str) -> list[dict[str, str]]:
    p = prompts()
    text = subject.text
    if len(text) > MAX_SUBJECT_CHARS:
        text = text[:MAX_SUBJECT_CHARS] + "\n[... cut: the rest is not shown ...]"
    template = p.texts[subject.kind]
    user = template.format(
        path=path,
        name=subject.name,
        text=text,
        task=subject.task or "",
        question=p.texts[f"{subject.kind}_question"],
        perspective=instruction,
    )
    return [{"role": "system", "content": p.texts["system"]}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class Panel:
    """Who judges the subjects of one file: the file (``path``), the perspectives'
    instructions by name, the model, the judge's settings and the verdicts' cache."""

    path: str
    instructions: dict[str, str]
    backend: Backend
    config: JudgeConfig
    cache: VerdictCache


def ask_all(subject: Subject, panel: Panel, stats: Stats, work: Work = IDLE) -> list[JudgeVerdict]:
    """Every perspective's verdict on one subject, in the order of ``instructions``: cached
    ones from the cache, the rest asked together (one batch for a model in process; the
    prompts share everything but the perspective's last line)."""
    path, instructions, backend = panel.path, panel.instructions, panel.backend
    config, cache = panel.config, panel.cache
    version = prompts().version + ("-lines" if config.constrain_evidence else "")
    keys = {
        name: cache.key(subject, backend.identity, version, name, instruction)
        for name, instruction in instructions.items()
    }
    stored = {name: cache.get(key) for name, key in keys.items()}
    missing = [name for name, value in stored.items() if value is None]
    if missing:
        quoted = subject.text if config.constrain_evidence else None
        grammar, forcing = answer_grammar(quoted), answer_forcing(quoted)
        requests = [
            ChatRequest(
                messages_for(subject, path, instructions[name]),
                # Servers get free-text quotes (schema converters differ, and some mis-escape
                # enums); llama.cpp in process gets the exact lines as a grammar.
                schema=answer_schema(None),
                grammar=grammar,
                forcing=forcing,
                max_tokens=config.max_tokens,
                temperature=0.0,
                seed=0,
            )
            for name in missing
        ]
        started = time.perf_counter()
        try:
            generations = chat_batch(backend, requests, work=work)
        except BatchCancelled:
            raise Cancelled from None
        stats.seconds += time.perf_counter() - started
        for name, generation in zip(missing, generations, strict=True):
            stats.calls += 1
            stats.prompt_tokens += generation.prompt_tokens
            stats.completion_tokens += generation.completion_tokens
            stored[name] = {"text": generation.text}
            cache.put(keys[name], stored[name])
    stats.cached += len(instructions) - len(missing)
    return [
        parse_answer(stored[name]["text"], name, subject.text, cached=name not in missing)
        for name in instructions
    ]


_SENTENCE_END = re.compile(r"[.!?。！？](?=[\s\"')\]]|$)")


def whole_sentences(reason: str, limit: int = MAX_REASON) -> str:
    """A reason as a person reads it: the grammar bounds a reason at ``limit`` characters,
    so a model that runs on is cut mid-word (``would fail fora``). A reason that reaches
    the bound without ending a sentence is cut back to its last whole sentence when that
    keeps most of it, else to its last whole word, with an ellipsis."""
    reason = " ".join(reason.split())
    if len(reason) < limit - 2 or _SENTENCE_END.search(reason[-2:]):
        return reason
    ends = [m.end() for m in _SENTENCE_END.finditer(reason)]
    if ends and ends[-1] >= len(reason) // 2:
        return reason[: ends[-1]]
    cut = reason.rstrip()
    space = cut.rfind(" ")
    if space > 0:
        cut = cut[:space]
    return cut.rstrip(" ,;:-–—") + "…"


def parse_answer(
    text: str, perspective: str, subject_text: str, *, cached: bool = False
) -> JudgeVerdict:
    """The model's JSON as a verdict with its quotes checked.

    Output that is not the schema's JSON (a server that ignored the constraint, a cut-off
    answer) becomes a REJECT whose evidence is marked hallucinated — so it can only ever
    send the item to a person, never pass it.
    """
    try:
        answer = Answer.model_validate_json(text)
    except ValidationError:
        return JudgeVerdict(
            perspective=perspective,
            verdict="REJECT",
            evidence=(),
            reason="the model's answer was not valid JSON for the verdict schema",
            hallucinated=(text[:120] or "<empty answer>",),
            cached=cached,
        )
    evidence = tuple(q.strip() for q in answer.evidence)
    hallucinated = tuple(q for q in evidence if not quote_found(q, subject_text))
    return JudgeVerdict(
        perspective=perspective,
        verdict=answer.verdict,
        evidence=evidence,
        reason=whole_sentences(answer.reason),
        hallucinated=hallucinated,
        cached=cached,
    )


def decide(
    subject: Subject, verdicts: Sequence[JudgeVerdict], threshold: float
) -> tuple[Literal["PASS", "REJECT", "UNCLEAR"], float, list[str]]:
    """The rule of the layer: agreement at or above the threshold and honest evidence."""
    counts = Counter(v.verdict for v in verdicts)
    top, top_count = counts.most_common(1)[0]
    agreement = top_count / len(verdicts)
    reasons: list[str] = []
    for v in verdicts:
        for quote in v.hallucinated:
            reasons.append(f"{v.perspective}: evidence not found in the text: {quote!r}")
    tie = len(counts) > 1 and top_count * 2 == len(verdicts)
    if agreement < threshold or tie:
        split = ", ".join(f"{v.perspective} {v.verdict}" for v in verdicts)
        reasons.append(
            f"perspectives disagree ({split}): {agreement:.0%} < {threshold:.0%} threshold"
        )
    if reasons:
        return "UNCLEAR", agreement, reasons
    return top, agreement, [f"{v.perspective}: {v.reason}" for v in verdicts if v.reason]


@dataclass
class FileJudgement:
    """Everything the judge and the review queue said about one file."""

    path: str
    decisions: list[Decision] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    finding_decisions: list[Decision] = field(default_factory=list)  # parallel to findings
    notes: list[str] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    # Set when the model process died while judging this file: the item it was judging is
    # UNCLEAR with this reason (queued for a person), and the rest were not judged.
    crashed: str | None = None


def judge_subjects(
    path: str,
    found: Sequence[Subject],
    backend: Backend,
    config: JudgeConfig,
    *,
    root: Path | None = None,
    cache: VerdictCache | None = None,
    work: Work = IDLE,
    queue: bool = True,
) -> FileJudgement:
    """Judge ``found`` subjects of the file ``path`` (relative to ``root``).

    With ``root`` and ``queue``, UNCLEAR and audited items enter ``root/.referee/review.jsonl``
    and decisions already recorded there are applied.
    """
    result = FileJudgement(path)
    cache = cache if cache is not None else default_cache()
    instructions = perspective_instructions(config)
    panel = Panel(path, instructions, backend, config, cache)
    queue_state = review.read(root) if root is not None else review.Queue()
    result.notes.extend(queue_state.problems)
    for number, subject in enumerate(found, start=1):
        work.raise_if_cancelled()
        work.advance(subject.name, number, len(found), ", ".join(instructions))
        decision, rate = _judge_one(subject, panel, result, work)
        if root is not None and (decision.outcome == "UNCLEAR" or decision.audit):
            decision = _through_review(root, path, subject, decision, rate, queue_state, queue)
        result.decisions.append(decision)
        if result.crashed is not None:
            break
    pairs = [(f, d) for d in result.decisions if (f := finding_for(path, d)) is not None]
    result.findings = [f for f, _ in pairs]
    result.finding_decisions = [d for _, d in pairs]
    return result


def _judge_one(
    subject: Subject, panel: Panel, result: FileJudgement, work: Work
) -> tuple[Decision, float]:
    """The perspectives' verdicts on one subject and what they decide, with the audit
    sampling of a PASS: (the L2 decision, the audit rate it was sampled at)."""
    path, config = panel.path, panel.config
    try:
        verdicts = ask_all(subject, panel, result.stats, work)
    except (WorkerCrashed, WorkerUnavailable) as exc:
        # Never a PASS: the item goes to a person with the reason, the rest wait for
        # the next run (a fresh model process). Unavailable: it crashed a moment ago
        # (writing an execution check's oracles, say) and is not restarted yet.
        result.crashed = str(exc)
        verdicts = []
        outcome, agreement, reasons = "UNCLEAR", 0.0, [str(exc)]
    else:
        outcome, agreement, reasons = decide(subject, verdicts, config.divergence_threshold)
    audit = False
    rate = 0.0
    if outcome == "PASS":
        rate = review.audit_rate(config.audit_rate, review.risk_for(path, config.risk), agreement)
        audit = review.sampled(subject.content_sha256, rate)
    decision = Decision(
        subject=subject.name,
        kind=subject.kind,
        outcome=outcome,
        layer=Layer.L2,
        agreement=agreement,
        reasons=tuple(reasons),
        verdicts=tuple(verdicts),
        span=subject.span,
        content_sha256=subject.content_sha256,
        audit=audit,
    )
    return decision, rate


def _through_review(
    root: Path,
    path: str,
    subject: Subject,
    decision: Decision,
    rate: float,
    queue_state: review.Queue,
    queue: bool,
) -> Decision:
    """An UNCLEAR or audited decision and the review queue: a person's decision recorded
    there replaces it (L3); otherwise, with ``queue``, it enters the queue once."""
    kind: Literal["judge", "audit"] = "judge" if decision.outcome == "UNCLEAR" else "audit"
    item = _review_item(kind, path, subject, decision, rate)
    known = queue_state.items.get(item.id)
    if known is not None and known.decision is not None:
        return decision.model_copy(
            update={
                "outcome": "PASS" if known.decision == "accepted" else "REJECT",
                "layer": Layer.L3,
                "reasons": (
                    f"{known.decision} by {known.decided_by or 'a reviewer'}"
                    f" on {known.decided or '?'}",
                    *decision.reasons,
                ),
            }
        )
    if queue and known is None:
        review.submit(root, item)
    return decision


def _review_item(
    kind: Literal["judge", "audit"],
    path: str,
    subject: Subject,
    decision: Decision,
    rate: float = 0.0,
) -> review.ReviewItem:
    if kind == "judge":
        title = f"{subject.name}: the judge could not decide"
        reasons = list(decision.reasons)
    else:
        # The perspectives' reasons are in the evidence, each beside its verdict.
        title = f"{subject.name}: passed by the judge, sampled for an audit"
        passed = sum(v.verdict == "PASS" for v in decision.verdicts)
        reasons = [
            f"{passed} of {len(decision.verdicts)} perspectives passed it; sampled at an "
            f"audit rate of {rate * 100:.3g}% (audit-rate × risk / agreement^1.5)"
        ]
    evidence = [said(v, quote=repr) for v in decision.verdicts]
    return review.new_item(
        kind=kind,
        path=path,
        line=subject.span.start.line,
        subject=subject.name,
        content_sha256=subject.content_sha256,
        title=title,
        reasons=reasons,
        evidence=evidence,
    )


def outdated(items: Sequence[review.ReviewItem], settings: Settings) -> set[str]:
    """The ids of judge and audit items whose content is no longer in the workspace.

    An item is about one function (or one task document) as it was when judged; once the
    function is edited, renamed or deleted, the file removed, or the document's task
    changed, a person has nothing left to decide — the next check judges the new content
    as a new item. Each file is read once. Arbitration items are never outdated here (what
    they hash is the failing assertion as the test run reported it), nor is an item whose
    file cannot be analysed now.
    """
    by_path: dict[str, list[review.ReviewItem]] = {}
    for item in items:
        if item.kind in ("judge", "audit", "execution"):
            by_path.setdefault(item.path, []).append(item)
    gone: set[str] = set()
    for path, group in by_path.items():
        hashes = _current_hashes(settings, path, {item.subject for item in group})
        if hashes is None:
            continue
        gone.update(item.id for item in group if item.content_sha256 not in hashes)
    return gone


def waiting(settings: Settings) -> list[review.ReviewItem]:
    """The project's pending review items that are not outdated: what a person has left."""
    queue = review.read(settings.root)
    pending = queue.pending()
    stale = outdated(pending, settings)
    return [item for item in pending if item.id not in stale]


def _current_hashes(settings: Settings, relpath: str, names: set[str]) -> set[str] | None:
    """The content hashes of the subjects ``relpath`` holds now (empty when it is gone;
    None when it cannot be analysed, so nothing is called outdated on a guess)."""
    kind = kind_of(relpath)
    try:
        data = read_bytes(settings.root / relpath, settings.config.max_file_size)
        text = decode(data, kind, settings.config.max_file_size)
    except FileNotFoundError:
        return set()
    except OSError:
        return None
    except Unreadable:
        return set()
    hashes: set[str] = set()
    task = next((c.task for c in settings.contracts_for(relpath) if c.task), None)
    if task is not None:
        # A task item's subject is the file's name as the judge was given it.
        nowhere = Span(start=Location(line=1, column=1), end=Location(line=1, column=1))
        hashes.update(
            Subject("task", name, text, nowhere, task=task).content_sha256 for name in names
        )
    if kind == "python":
        source = SourceFile(relpath, text, kind)
        try:
            found = list(_function_subjects(source, settings.is_test_file(relpath)))
        except RecursionError:
            return None
        hashes.update(subject.content_sha256 for subject in found)
    return hashes


def review_item_for(path: str, decision: Decision) -> str:
    """The id of the review item a decision queued (or would queue)."""
    kind = "judge" if decision.outcome == "UNCLEAR" or decision.layer == Layer.L3 else "audit"
    return review.item_id(kind, path, decision.subject, decision.content_sha256)


# ------------------------------------------------------------------------- whole files


def judge_file(
    source: SourceFile,
    settings: Settings,
    relpath: str,
    findings: Sequence[Finding],
    backend: Backend,
    *,
    baseline: str | None = None,
    cache: VerdictCache | None = None,
    work: Work = IDLE,
    queue: bool = True,
    decided: Collection[str] = (),
) -> FileJudgement:
    """L2 and L3 for one file, after L0/L1 gave ``findings``: the judge's findings, filtered
    by the project's rule selection, per-file-ignores and ``# referee: ignore`` comments."""
    from referee.checks.engine import _is_suppressed, suppressions
    from referee.checks.registry import BY_CODE

    contracts = settings.contracts_for(relpath)
    task = next((c.task for c in contracts if c.task), None)
    blocked = [
        f for f in findings if f.severity == Severity.ERROR and f.layer in (Layer.L0, Layer.L1)
    ]
    found, notes = subjects(
        source,
        task=task,
        is_test_file=source.kind == "python" and settings.is_test_file(relpath),
        blocked=blocked,
        baseline=baseline,
        decided=decided,
    )
    result = judge_subjects(
        relpath,
        found,
        backend,
        settings.config.judge,
        root=settings.root,
        cache=cache if cache is not None else default_cache(settings.config.cache_size),
        work=work,
        queue=queue,
    )
    result.notes[:0] = notes
    result.path = source.path
    table = suppressions(source.text)
    pairs = [
        (f, d)
        for d in result.decisions
        if (f := finding_for(source.path, d, lambda c, s: settings.severity(BY_CODE[c], s)))
        and settings.reports(f.code, relpath)
        and not _is_suppressed(f, table)
    ]
    result.findings = [f for f, _ in pairs]
    result.finding_decisions = [d for _, d in pairs]
    return result


# --------------------------------------------------------------------------- findings


def said(verdict: JudgeVerdict, quote: Callable[[str], str] = str) -> str:
    """One perspective's answer on one line, for a person: its verdict, its reason, and its
    quotes (each once) — ``balanced REJECT: Returns the sum, not the mean. — return s / n``."""
    line = f"{verdict.perspective} {verdict.verdict}"
    if verdict.reason:
        line += f": {verdict.reason}"
    quotes = list(dict.fromkeys(verdict.evidence))
    if quotes:
        line += " — " + " | ".join(quote(q) for q in quotes)
    return line


def finding_for(
    path: str, decision: Decision, severity: Callable[[str, Severity], Severity] | None = None
) -> Finding | None:
    """The diagnostic a decision shows in editors and in ``referee check --judge``."""
    span = decision.span or Span(start=Location(line=1, column=1), end=Location(line=1, column=1))
    # Underline only the first line of a function: the whole body would drown the editor.
    span = Span(start=span.start, end=Location(line=span.start.line, column=span.start.column + 1))
    evidence = "\n".join(said(v) for v in decision.verdicts) or None
    if decision.layer == Layer.L3:
        if decision.outcome != "REJECT":
            return None
        code = "REF403"
        message = f"{decision.subject}: rejected in human review ({decision.reasons[0]})"
    elif decision.outcome == "REJECT":
        code = "REF401"
        why = next((v.reason for v in decision.verdicts if v.reason), "")
        message = f"{decision.subject}: the judge rejects this {decision.kind}: {why}".rstrip(": ")
    elif decision.outcome == "UNCLEAR" or decision.audit:
        code = "REF402"
        what = "; ".join(decision.reasons) if decision.outcome == "UNCLEAR" else "audit sample"
        message = f"{decision.subject}: needs human review: {what}"
    else:
        return None
    from referee.checks.registry import BY_CODE

    rule = BY_CODE[code]
    return Finding(
        code=code,
        name=rule.name,
        layer=rule.layer,
        severity=severity(code, rule.severity) if severity else rule.severity,
        message=message,
        path=path,
        span=span,
        evidence=evidence,
        url=rule.url,
    )


__all__ = [
    "Answer",
    "BackendError",
    "Cancelled",
    "FileJudgement",
    "Stats",
    "Subject",
    "VerdictCache",
    "answer_schema",
    "decide",
    "judge_subjects",
    "parse_answer",
    "quote_found",
    "subjects",
]
