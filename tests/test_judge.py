"""The L2 judge's logic around the model, and the L3 review queue.

The model is replaced by a scripted backend here only: these tests are about what referee
does with answers (evidence checking, the decision rule, caching, the queue). The real
model runs end to end in tests/test_judge_model.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import llama_cpp
import pytest

from referee.checks import review
from referee.checks.config import Settings
from referee.checks.configuration import Contract, JudgeConfig, RefereeConfig
from referee.checks.engine import check_source
from referee.checks.judge import answer as answers
from referee.checks.judge import core
from referee.checks.judge.backend import (
    BatchCancelled,
    ChatRequest,
    Generation,
    ScriptedBackend,
    chat_batch,
)
from referee.checks.models import Layer
from referee.checks.progress import Work
from referee.checks.source import SourceFile

CODE = '''\
def is_even(n: int) -> bool:
    """Whether n is even."""
    return n % 2 == 1


def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b
'''


def answer(verdict: str, *quotes: str, reason: str = "because") -> str:
    return json.dumps({"reason": reason, "evidence": list(quotes), "verdict": verdict})


def by_perspective(table: dict[str, str]):
    """A backend whose answer depends on the perspective named at the end of the prompt."""

    def reply(messages, schema):
        prompt = messages[-1]["content"]
        for name, text in table.items():
            if f"Perspective: {name}" in prompt:
                return text
        raise AssertionError(f"no scripted answer for {prompt[-80:]!r}")

    return ScriptedBackend(reply)


def settings_for(tmp_path: Path, **judge: object) -> Settings:
    config = RefereeConfig(judge=JudgeConfig(**judge)) if judge else RefereeConfig()
    return Settings(config=config, root=tmp_path)


def run(tmp_path: Path, backend, text: str = CODE, path: str = "mathx.py", **judge: object):
    settings = settings_for(tmp_path, **judge)
    source = SourceFile(path, text)
    findings = check_source(source, settings, path)
    return core.judge_file(
        source, settings, path, findings, backend, cache=core.VerdictCache(tmp_path / "cache")
    )


# ------------------------------------------------------------------------ evidence


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("return n % 2 == 1", True),
        ("return   n % 2\n == 1", True),  # whitespace runs are one space
        ("`return n % 2 == 1`", True),  # wrapping backticks forgiven
        ("return n % 2 == 0", False),
        ("The function returns whether n is odd.", False),  # a paraphrase is not a quote
        ("", False),
        ("   ", False),
    ],
)
def test_quote_found_normalises_whitespace_and_nothing_else(quote: str, found: bool) -> None:
    assert core.quote_found(quote, CODE) is found


def test_a_paraphrased_quote_is_hallucinated_and_sends_the_item_to_a_person(tmp_path) -> None:
    backend = by_perspective(
        {
            "strict": answer("REJECT", "return n % 2 == 1"),
            "balanced": answer("REJECT", "it returns n modulo two equals one"),
            "lenient": answer("REJECT", "return n % 2 == 1"),
        }
    )
    result = run(tmp_path, backend)
    decision = next(d for d in result.decisions if d.subject == "is_even")
    assert decision.outcome == "UNCLEAR"
    assert decision.layer == Layer.L2
    assert any("evidence not found" in r and "modulo" in r for r in decision.reasons)
    finding = next(f for f in result.findings if f.span.start.line == 1)
    assert finding.code == "REF402"
    queued = review.read(tmp_path).pending()
    assert [item.subject for item in queued] == ["is_even", "add"]  # add: same fake answers


def test_an_answer_that_is_not_the_schema_can_only_reach_a_person(tmp_path) -> None:
    backend = by_perspective(
        {"strict": "PASS!", "balanced": answer("PASS", "return a + b"), "lenient": "{"}
    )
    result = run(tmp_path, backend, text="def add(a, b):\n    return a + b\n")
    (decision,) = result.decisions
    assert decision.outcome == "UNCLEAR"
    assert {v.verdict for v in decision.verdicts} == {"PASS", "REJECT"}


# ------------------------------------------------------------------------ decision


def test_unanimous_verdicts_with_real_quotes_decide_at_l2(tmp_path) -> None:
    def reply(messages, schema):
        prompt = messages[-1]["content"]
        if "`is_even`" in prompt:
            return answer("REJECT", "return n % 2 == 1", reason="returns True for odd n")
        return answer("PASS", "return a + b")

    result = run(tmp_path, ScriptedBackend(reply), audit_rate=0.0)
    outcomes = {d.subject: (d.outcome, d.layer, d.agreement) for d in result.decisions}
    assert outcomes == {"is_even": ("REJECT", Layer.L2, 1.0), "add": ("PASS", Layer.L2, 1.0)}
    (finding,) = result.findings
    assert (finding.code, finding.layer, finding.span.start.line) == ("REF401", Layer.L2, 1)
    assert "returns True for odd n" in finding.message
    assert "return n % 2 == 1" in (finding.evidence or "")
    assert review.read(tmp_path).items == {}  # nothing for a person


def test_a_split_vote_is_never_settled_by_majority(tmp_path) -> None:
    backend = by_perspective(
        {
            "strict": answer("REJECT", "return a + b"),
            "balanced": answer("PASS", "return a + b"),
            "lenient": answer("PASS", "return a + b"),
        }
    )
    result = run(tmp_path, backend, text="def add(a, b):\n    return a + b\n")
    (decision,) = result.decisions
    assert decision.outcome == "UNCLEAR"
    assert decision.agreement == pytest.approx(2 / 3)
    assert "perspectives disagree" in decision.reasons[-1]


def test_a_person_sees_why_each_perspective_said_what_it_said(tmp_path) -> None:
    backend = by_perspective(
        {
            "strict": answer("REJECT", "return a - b", "return a - b", reason="Subtracts b."),
            "balanced": answer("PASS", "def add(a, b):", reason="Adds the two numbers."),
            "lenient": answer("PASS", "def add(a, b):", reason="Adds the two numbers."),
        }
    )
    result = run(tmp_path, backend, text="def add(a, b):\n    return a - b\n")
    (finding,) = result.findings
    assert finding.code == "REF402"
    lines = (finding.evidence or "").splitlines()
    assert lines[0] == "strict REJECT: Subtracts b. — return a - b"  # each quote once
    assert lines[1] == "balanced PASS: Adds the two numbers. — def add(a, b):"
    (item,) = review.read(tmp_path).items.values()
    assert item.evidence[0] == "strict REJECT: Subtracts b. — 'return a - b'"


def test_the_threshold_is_configurable(tmp_path) -> None:
    backend = by_perspective(
        {
            "strict": answer("REJECT", "return a + b"),
            "balanced": answer("PASS", "return a + b"),
            "lenient": answer("PASS", "return a + b"),
        }
    )
    result = run(
        tmp_path,
        backend,
        text="def add(a, b):\n    return a + b\n",
        divergence_threshold=0.6,
        audit_rate=0.0,
    )
    assert [d.outcome for d in result.decisions] == ["PASS"]


def test_custom_perspectives_and_an_unknown_one(tmp_path) -> None:
    backend = by_perspective({"security": answer("PASS", "return a + b")})
    result = run(
        tmp_path,
        backend,
        text="def add(a, b):\n    return a + b\n",
        perspectives=["security"],
        custom_perspectives={"security": "Perspective: security. Look for injection."},
        audit_rate=0.0,
    )
    assert [d.outcome for d in result.decisions] == ["PASS"]
    with pytest.raises(ValueError, match="unknown judge perspective"):
        run(tmp_path, backend, perspectives=["paranoid"])


# ------------------------------------------------------------------------ residual only


def test_what_l0_rejects_never_reaches_the_model(tmp_path) -> None:
    text = (
        'def stub():\n    """Do it."""\n    raise NotImplementedError\n\n\n'
        "def add(a, b):\n    return a + b\n"
    )
    backend = by_perspective(
        {p: answer("PASS", "return a + b") for p in ("strict", "balanced", "lenient")}
    )
    result = run(tmp_path, backend, text=text, audit_rate=0.0)
    assert [d.subject for d in result.decisions] == ["add"]
    assert len(backend.calls) == 3
    assert not any("def stub" in m["content"] for call in backend.calls for m in call)
    assert "stub: rejected at L0/L1; not judged" in result.notes


def test_only_functions_changed_since_the_baseline_are_judged(tmp_path) -> None:
    backend = by_perspective(
        {p: answer("PASS", "return a + b") for p in ("strict", "balanced", "lenient")}
    )
    baseline = CODE.replace("== 1", "== 0")
    settings = settings_for(tmp_path, audit_rate=0.0, perspectives=["strict"])
    source = SourceFile("mathx.py", CODE)
    result = core.judge_file(
        source, settings, "mathx.py", [], backend, baseline=baseline, cache=core.VerdictCache(None)
    )
    assert [d.subject for d in result.decisions] == ["is_even"]


def test_a_task_contract_judges_the_whole_file_against_the_task(tmp_path) -> None:
    config = RefereeConfig(
        contract=[Contract(glob="*.md", task="Write a release note")],
        judge=JudgeConfig(audit_rate=0.0),
    )
    settings = Settings(config=config, root=tmp_path)
    text = "# Release 2.0\n\nNew: faster parsing.\n"
    backend = by_perspective(
        {p: answer("PASS", "New: faster parsing.") for p in ("strict", "balanced", "lenient")}
    )
    source = SourceFile("NOTES.md", text)
    result = core.judge_file(
        source, settings, "NOTES.md", [], backend, cache=core.VerdictCache(None)
    )
    (decision,) = result.decisions
    assert (decision.kind, decision.outcome) == ("task", "PASS")
    assert "Write a release note" in backend.calls[0][-1]["content"]


def test_a_test_function_gets_the_test_question(tmp_path) -> None:
    backend = by_perspective(
        {p: answer("PASS", "assert add(1, 2) == 3") for p in ("strict", "balanced", "lenient")}
    )
    run(tmp_path, backend, text="def test_add():\n    assert add(1, 2) == 3\n", path="test_m.py")
    assert "exercise its target" in backend.calls[0][-1]["content"]


# ------------------------------------------------------------------------ prompts


def test_perspectives_share_the_prompt_up_to_their_instruction(tmp_path) -> None:
    backend = by_perspective(
        {p: answer("PASS", "return a + b") for p in ("strict", "balanced", "lenient")}
    )
    run(tmp_path, backend, text="def add(a, b):\n    return a + b\n")
    prompts = [call[-1]["content"] for call in backend.calls]
    systems = {call[0]["content"] for call in backend.calls}
    assert len(systems) == 1
    common = prompts[0][: prompts[0].index("Perspective:")]
    assert all(
        p.startswith(common) and p[len(common) :].startswith("Perspective:") for p in prompts
    )


def test_the_grammar_constrains_quotes_to_the_items_lines_and_llama_cpp_accepts_it() -> None:
    tricky = 'def f():\n    """Doc \\ with "quotes" and 中文"""\n    return {"a": 1}\n'
    grammar = answers.answer_grammar(tricky)
    assert llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) is not None
    assert llama_cpp.LlamaGrammar.from_string(answers.answer_grammar(), verbose=False) is not None
    schema = answers.answer_schema(tricky)
    assert schema["properties"]["evidence"]["items"]["enum"] == answers.quotable_lines(tricky)
    assert list(schema["properties"]) == ["reason", "evidence", "verdict"]


def _write_with_forcing(forcing, free_parts: list[str]) -> tuple[str, int]:
    """Play a model that writes ``free_parts`` one character at a time wherever the
    forcing leaves it a choice; (the answer, how many characters were forced)."""
    written, forced_chars, parts = "", 0, list(free_parts)
    while True:
        more = forcing(written)
        if more is None:
            return written, forced_chars
        if more:
            written += more
            forced_chars += len(more)
            continue
        assert parts, f"the model was asked to choose after {written!r}"
        written += parts[0][0]
        parts[0] = parts[0][1:]
        if not parts[0]:
            parts.pop(0)


def test_forcing_fills_in_everything_the_grammar_leaves_no_choice_about() -> None:
    text = 'def f(x):\n    """Say "hi" \\ twice."""\n    return x * 2\n    return 中文\n'
    forcing = answers.answer_forcing(text)
    # the model chooses: its reason and the closing quote, the first letters of a quote
    # until one line fits, ", " or "]" after a quote, the first letter of the verdict
    written, forced = _write_with_forcing(forcing, ['Doubles x."', "return x", "]", "R"])
    data = json.loads(written)
    assert data == {"reason": "Doubles x.", "evidence": ["return x * 2"], "verdict": "REJECT"}
    assert forced > len(written) / 2
    # two quotes, one of them with escapes in its JSON form
    written, _ = _write_with_forcing(forcing, ['."', "d", ",", "return 中", "]", "P"])
    assert json.loads(written)["evidence"] == ["def f(x):", "return 中文"]
    written, _ = _write_with_forcing(forcing, ['."', "\\", "]", "P"])
    assert json.loads(written)["evidence"] == ['"""Say "hi" \\ twice."""']
    # every answer it completes is one the grammar's JSON schema accepts
    answers.Answer.model_validate_json(written)


def test_forcing_stays_out_of_the_way_of_an_answer_that_left_its_spacing() -> None:
    forcing = answers.answer_forcing("x = 1\n")
    assert forcing('{"reason":"') == ""  # the model chose no space: nothing is forced
    assert forcing('{"reason": "a" ,') == ""
    assert forcing('{"reason": "a\\" still') == ""  # an escaped quote does not close it
    assert forcing('{"reason": "a",') == ' "evidence": ["'
    assert forcing('{"reason": "a", "evidence": ["x = 1"], "verdict": "PASS"}') is None
    free = answers.answer_forcing(None)  # quotes not constrained: none is completed
    assert free('{"reason": "a", "evidence": ["x') == ""


def test_prompt_version_changes_with_the_prompt_file() -> None:
    version = core.prompts().version
    assert version.startswith("judge-v1-") and len(version) == len("judge-v1-") + 8


# ------------------------------------------------------------------------ cache


def test_an_unchanged_resave_makes_no_model_call(tmp_path) -> None:
    backend = by_perspective(
        {p: answer("PASS", "return a + b") for p in ("strict", "balanced", "lenient")}
    )
    text = "def add(a, b):\n    return a + b\n"
    first = run(tmp_path, backend, text=text)
    second = run(tmp_path, backend, text=text)
    assert (first.stats.calls, second.stats.calls, second.stats.cached) == (3, 0, 3)
    assert len(backend.calls) == 3
    third = run(tmp_path, backend, text=text.replace("a + b", "b + a").replace("a + b", "b + a"))
    assert third.stats.calls == 3  # new content, new verdicts


# ------------------------------------------------------------------------ L3


def test_a_human_decision_sticks_until_the_content_changes(tmp_path) -> None:
    backend = by_perspective(
        {
            "strict": answer("REJECT", "return a + b"),
            "balanced": answer("PASS", "return a + b"),
            "lenient": answer("PASS", "return a + b"),
        }
    )
    text = "def add(a, b):\n    return a + b\n"
    first = run(tmp_path, backend, text=text)
    (item,) = review.read(tmp_path).pending()
    review.decide(tmp_path, item.id[:6], "rejected", by="ada")
    second = run(tmp_path, backend, text=text)
    (decision,) = second.decisions
    assert (decision.outcome, decision.layer) == ("REJECT", Layer.L3)
    assert [f.code for f in second.findings] == ["REF403"]
    assert "rejected by ada" in second.findings[0].message
    assert first.findings[0].code == "REF402"
    changed = run(tmp_path, backend, text=text + "\n\n# touched\n")
    assert changed.decisions[0].layer == Layer.L3  # comment outside the function: same item
    edited = run(tmp_path, backend, text=text.replace("a + b", "a+b"))
    assert (edited.decisions[0].outcome, edited.decisions[0].layer) == ("UNCLEAR", Layer.L2)
    assert len(review.read(tmp_path).pending()) == 1


SPLIT = {
    "strict": answer("REJECT", "return a + b"),
    "balanced": answer("PASS", "return a + b"),
    "lenient": answer("PASS", "return a + b"),
}


def test_an_item_whose_code_changed_is_outdated_and_no_longer_waits(tmp_path) -> None:
    text = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    source = tmp_path / "mathx.py"
    source.write_text(text)
    run(tmp_path, by_perspective(SPLIT), text=text)  # `sub`'s quote is not in it: UNCLEAR too
    settings = settings_for(tmp_path)
    items = {i.subject: i for i in review.read(tmp_path).pending()}
    assert set(items) == {"add", "sub"}
    assert core.outdated(list(items.values()), settings) == set()
    assert {i.subject for i in core.waiting(settings)} == {"add", "sub"}

    source.write_text(text.replace("a - b", "b - a") + "\n# a comment outside both\n")
    assert core.outdated(list(items.values()), settings) == {items["sub"].id}
    assert [i.subject for i in core.waiting(settings)] == ["add"]
    assert len(review.read(tmp_path).pending()) == 2  # hidden, not removed

    source.write_text(text)  # reverted: the item applies again
    assert core.outdated(list(items.values()), settings) == set()
    source.write_text(text.replace("def add", "def plus"))  # renamed
    assert core.outdated(list(items.values()), settings) == {items["add"].id}
    source.unlink()
    assert core.outdated(list(items.values()), settings) == {items["add"].id, items["sub"].id}

    arbitration = review.new_item(
        kind="arbitration",
        path="test_gone.py",
        line=3,
        subject="test_gone.py::test_x",
        content_sha256="cd" * 32,
        title="Arbitration UNCLEAR: no independent truth",
    )
    assert core.outdated([arbitration], settings) == set()  # not the judge's to say


def test_a_task_item_is_outdated_when_the_document_or_its_task_changes(tmp_path) -> None:
    def settings(task: str) -> Settings:
        contract = [Contract(glob="*.md", task=task)]
        config = RefereeConfig(contract=contract, judge=JudgeConfig(audit_rate=0.0))
        return Settings(config=config, root=tmp_path)

    text = "# Release 2.0\n\nNew: faster parsing.\n"
    (tmp_path / "NOTES.md").write_text(text)
    backend = by_perspective(
        {
            "strict": answer("REJECT", "New: faster parsing."),
            "balanced": answer("PASS", "New: faster parsing."),
            "lenient": answer("PASS", "New: faster parsing."),
        }
    )
    source = SourceFile("NOTES.md", text)
    first = settings("Write a release note")
    core.judge_file(source, first, "NOTES.md", [], backend, cache=core.VerdictCache(None))
    (item,) = review.read(tmp_path).pending()
    assert core.outdated([item], first) == set()
    assert core.outdated([item], settings("Write a changelog")) == {item.id}
    (tmp_path / "NOTES.md").write_text(text + "Fixed: a crash.\n")
    assert core.outdated([item], first) == {item.id}


def test_audit_rate_formula_and_deterministic_sampling() -> None:
    assert review.audit_rate(0.05, 1.0, 1.0) == pytest.approx(0.05)
    assert review.audit_rate(0.05, 2.0, 0.5) == pytest.approx(0.05 * 2 / 0.5**1.5)
    assert review.audit_rate(0.5, 4.0, 1.0) == 1.0  # clipped
    assert review.audit_rate(0.05, 1.0, 0.0) == 1.0
    assert review.audit_rate(0.0, 9.0, 1.0) == 0.0
    hashes = [f"{i:064x}" for i in range(2000)]
    share = sum(review.sampled(h, 0.1) for h in hashes) / len(hashes)
    assert 0.07 < share < 0.13
    assert [review.sampled(h, 0.1) for h in hashes] == [review.sampled(h, 0.1) for h in hashes]
    assert review.risk_for("src/pay/api.py", {"src/pay/*": 3.0}) == 3.0
    assert review.risk_for("src/other.py", {"src/pay/*": 3.0}) == 1.0


def test_audited_passes_enter_the_queue_as_audit_items(tmp_path) -> None:
    backend = by_perspective(
        {p: answer("PASS", "return a + b") for p in ("strict", "balanced", "lenient")}
    )
    result = run(tmp_path, backend, text="def add(a, b):\n    return a + b\n", audit_rate=1.0)
    (decision,) = result.decisions
    assert (decision.outcome, decision.audit) == ("PASS", True)
    assert [f.code for f in result.findings] == ["REF402"]
    (item,) = review.read(tmp_path).pending()
    assert item.kind == "audit"
    assert item.reasons == (
        "3 of 3 perspectives passed it; sampled at an audit rate of 100% "
        "(audit-rate × risk / agreement^1.5)",
    )


def test_a_corrupt_queue_line_is_reported_and_the_rest_kept(tmp_path) -> None:
    item = review.new_item(
        kind="judge", path="a.py", line=1, subject="f", content_sha256="x", title="t"
    )
    review.submit(tmp_path, item)
    with (tmp_path / review.QUEUE).open("ab") as handle:
        handle.write(b'{"type": "item", "id": "trunc')
    other = review.new_item(
        kind="judge", path="a.py", line=2, subject="g", content_sha256="y", title="t"
    )
    review.submit(tmp_path, other)
    queue = review.read(tmp_path)
    assert sorted(i.subject for i in queue.pending()) == ["f", "g"]
    assert len(queue.problems) == 1 and "not valid JSON" in queue.problems[0]
    with pytest.raises(KeyError, match="no review item"):
        queue.find("zzzz")


# ------------------------------------------------------------------------ calibration


def test_the_cost_ratio_picks_the_operating_point(tmp_path) -> None:
    from referee.checks.judge.calibrate import Labelled, operating_points

    def item(strict: str, lenient: str, truth: str) -> Labelled:
        return Labelled({"strict": strict, "lenient": lenient}, frozenset(), truth)  # type: ignore[arg-type]

    # strict catches every bad item but rejects one good one; lenient passes everything
    items = (
        [item("REJECT", "PASS", "bad")] * 3
        + [item("REJECT", "PASS", "good")]
        + [item("PASS", "PASS", "good")] * 4
    )
    costly_fn = operating_points(items, ["strict", "lenient"], cost_ratio=3.0)[0]
    assert (costly_fn.perspectives, costly_fn.fn, costly_fn.fp) == (("strict",), 0, 1)
    cheap_fn = operating_points(items, ["strict", "lenient"], cost_ratio=0.2, review_cost=5)[0]
    assert (cheap_fn.perspectives, cheap_fn.fn, cheap_fn.fp) == (("lenient",), 3, 0)
    both = next(
        p for p in operating_points(items, ["strict", "lenient"]) if len(p.perspectives) == 2
    )
    assert both.unclear == 4  # a 1–1 split is never decided, whatever the threshold

    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "\n".join(
            json.dumps({"verdicts": i.verdicts, "label": i.truth, "hallucinated": []})
            for i in items
        ),
        encoding="utf-8",
    )
    from click.testing import CliRunner

    from referee.server.cli import main

    result = CliRunner().invoke(main, ["judge", "calibrate", str(labels), "--cost-ratio", "3"])
    assert result.exit_code == 0, result.output
    assert 'perspectives = ["strict"]' in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"verdicts": {"strict": "MAYBE"}, "label": "good"}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["judge", "calibrate", str(bad)])
    assert result.exit_code == 2 and "line 1" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\x00\n", "cannot read"),
        (b'{"verdicts": {"strict": "PASS"}, "hallucinated": 5, "label": "good"}\n', "line 1"),
        (b"[[1]]\n", "line 1"),
        (
            json.dumps(
                {"verdicts": {f"p{i}": "PASS" for i in range(22)}, "label": "good"}
            ).encode(),
            "22 perspectives",
        ),
    ],
    ids=["not-utf8", "hallucinated-not-a-list", "not-an-object", "too-many-perspectives"],
)
def test_calibrate_refuses_bad_label_files_with_one_line(
    tmp_path: Path, content: bytes, message: str
):
    from click.testing import CliRunner

    from referee.server.cli import main

    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(content)
    result = CliRunner().invoke(main, ["judge", "calibrate", str(labels)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert message in result.output


def test_backends_without_batching_answer_one_by_one():
    class Recorder:
        identity = "recorder"

        def __init__(self) -> None:
            self.seen: list[int] = []

        def chat(self, messages, **kwargs):
            self.seen.append(kwargs["seed"])
            return Generation(text=f"answer {kwargs['seed']}")

    recorder = Recorder()
    requests = [ChatRequest([{"role": "user", "content": "x"}], seed=s) for s in (4, 5)]
    assert [g.text for g in chat_batch(recorder, requests)] == ["answer 4", "answer 5"]
    assert recorder.seen == [4, 5]
    with pytest.raises(BatchCancelled):
        chat_batch(recorder, requests, work=Work(is_cancelled=lambda: True))


def test_a_reason_cut_by_the_grammar_is_shown_as_whole_words():
    from referee.checks.judge.core import MAX_REASON, parse_answer

    text = "def add(a, b):\n    return a - b\n"

    def reason_of(reason: str) -> str:
        answer = {"reason": reason[:MAX_REASON], "evidence": ["return a - b"], "verdict": "REJECT"}
        return parse_answer(json.dumps(answer), "strict", text).reason

    runon = (
        "It subtracts b from a instead of adding them, so add(2, 3) returns -1 and every "
        "caller that expects a sum would fail fora"
    )
    cut = reason_of(runon)
    assert cut.endswith("…") and "fora" not in cut and runon.startswith(cut[:-1])
    first = "Subtracts b from a where the docstring promises the sum of both numbers."
    assert reason_of(f"{first} It would surprise every caller of this function and more") == first
    assert reason_of("Subtracts.") == "Subtracts."
