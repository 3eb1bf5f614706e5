"""The one table of rules. A rule's code never changes meaning once released."""

from __future__ import annotations

from referee.checks.contract import rules as contract
from referee.checks.execution import rules as execution
from referee.checks.guard import codes, tampering, under_test, weakened
from referee.checks.judge import rules as judge
from referee.checks.models import Layer, Severity
from referee.checks.rule import ANY, PYTHON, STATEMENT, TEXT, Rule
from referee.checks.shape import (
    assertions,
    documents,
    lookalikes,
    parse_errors,
    placeholders,
    unfailable,
)

ERR, WARN, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
L0, L1, L2, L3 = Layer.L0, Layer.L1, Layer.L2, Layer.L3
MODEL_LAYER = frozenset()  # never run by the engine: the judge and the review queue report these

# fmt: off
RULES: tuple[Rule, ...] = (
    # ---- L0 shape: files
    Rule("REF001", "syntax-error", L0, ERR, "file does not compile", PYTHON,
         parse_errors.syntax_error),
    # ---- L0 shape: placeholders
    Rule("REF101", "placeholder-body", L0, ERR, "function body is a placeholder", PYTHON,
         placeholders.placeholder_body,
         scope=STATEMENT),
    Rule("REF102", "placeholder-marker", L0, INFO, "TODO/FIXME/XXX/TBD marker", ANY,
         placeholders.placeholder_marker,
         scope=STATEMENT),
    Rule("REF103", "placeholder-document", L0, ERR, "file is nothing but a placeholder", ANY,
         placeholders.placeholder_document),
    Rule("REF104", "empty-file", L0, ERR, "file is empty", ANY, documents.empty_file),
    Rule("REF105", "punctuation-only", L0, ERR, "document is only punctuation", TEXT,
         documents.punctuation_only),
    # ---- L0 shape: tests and assertions
    Rule("REF110", "test-without-assertion", L0, WARN, "test has no assertion", PYTHON,
         assertions.test_without_assertion,
         scope=STATEMENT),
    Rule("REF111", "constant-assertion", L0, ERR, "assertion on a constant cannot fail", PYTHON,
         assertions.constant_assertion,
         scope=STATEMENT),
    Rule("REF112", "tuple-assertion", L0, ERR, "assertion on a tuple is always true", PYTHON,
         assertions.tuple_assertion,
         scope=STATEMENT, fix="unsafe"),
    Rule("REF113", "self-comparison", L0, ERR, "assertion compares a value with itself",
         PYTHON, assertions.self_comparison,
         scope=STATEMENT),
    Rule("REF114", "fresh-object-identity", L0, ERR,
         "identity check against a new object", PYTHON, assertions.fresh_object_identity,
         scope=STATEMENT),
    Rule("REF115", "mock-assertion-lookalike", L0, ERR,
         "call looks like a mock assertion but checks nothing", PYTHON,
         lookalikes.mock_assertion_lookalike,
         scope=STATEMENT, fix="unsafe"),
    Rule("REF116", "comparison-statement", L0, ERR,
         "comparison in a test is computed and thrown away", PYTHON,
         lookalikes.comparison_statement,
         scope=STATEMENT, fix="unsafe"),
    Rule("REF117", "duplicate-parametrize-case", L0, ERR,
         "parametrize case repeats an earlier one", PYTHON,
         assertions.duplicate_parametrize_case,
         scope=STATEMENT),
    Rule("REF120", "unfailable-test", L0, ERR, "test can never fail", PYTHON,
         unfailable.unfailable_test,
         scope=STATEMENT),
    Rule("REF121", "skip-without-reason", L0, WARN, "unconditional skip without a reason",
         PYTHON, unfailable.skip_without_reason,
         scope=STATEMENT),
    Rule("REF130", "empty-test-run", L0, ERR, "test run claims success but ran nothing", TEXT,
         documents.empty_test_run),
    # ---- L1 contracts
    Rule("REF201", "contract-min-lines", L1, ERR, "fewer lines than the contract requires",
         ANY, contract.contract_min_lines),
    Rule("REF202", "contract-min-chars", L1, ERR, "shorter than the contract requires", ANY,
         contract.contract_min_chars),
    Rule("REF203", "contract-keywords", L1, ERR, "too few of the required keywords", ANY,
         contract.contract_keywords),
    Rule("REF204", "contract-forbidden-word", L1, ERR, "contains a forbidden word", ANY,
         contract.contract_forbidden_word),
    Rule("REF205", "contract-required-heading", L1, ERR, "a required heading is missing", TEXT,
         contract.contract_required_heading),
    Rule("REF206", "contract-expect-heading", L1, ERR, "document has no heading", TEXT,
         contract.contract_expect_heading),
    Rule("REF207", "contract-required-symbol", L1, ERR, "a required symbol is missing", PYTHON,
         contract.contract_required_symbol),
    Rule("REF208", "contract-min-tests", L1, ERR, "fewer tests than the contract requires",
         PYTHON, contract.contract_min_tests),
    Rule("REF209", "contract-tests-failed", L1, ERR, "the reported test run failed", TEXT,
         contract.contract_tests_failed),
    # ---- L1 anti-gaming guard: compared with a baseline (git HEAD or --base)
    Rule(codes.TEST_REMOVED, "test-removed", L1, ERR,
         "a test was removed", PYTHON, weakened.test_removed),
    Rule(codes.ASSERTION_REMOVED, "assertion-removed", L1, ERR, "an assertion was removed", PYTHON,
         weakened.assertion_removed),
    Rule(codes.EXPECTED_VALUE_CHANGED, "expected-value-changed", L1, ERR,
         "an expected value changed without a certificate", PYTHON,
         weakened.expected_value_changed),
    Rule(codes.COMPARISON_WEAKENED, "comparison-weakened", L1, ERR,
         "an assertion's comparison was weakened", PYTHON, weakened.comparison_weakened),
    Rule(codes.APPROX_LOOSENED, "approx-loosened", L1, ERR,
         "an approx tolerance was loosened", PYTHON, weakened.approx_loosened),
    Rule(codes.RAISES_WIDENED, "raises-widened", L1, ERR,
         "an expected exception was widened", PYTHON, weakened.raises_widened),
    Rule(codes.RAISES_MATCH_REMOVED, "raises-match-removed", L1, ERR,
         "an exception message match was removed", PYTHON, weakened.raises_match_removed),
    Rule(codes.PARAMETRIZE_CASES_REMOVED, "parametrize-cases-removed", L1, ERR,
         "parametrized cases were removed", PYTHON, weakened.parametrize_cases_removed),
    Rule(codes.RENAMED_OUT_OF_COLLECTION, "renamed-out-of-collection", L1, ERR,
         "a test was renamed so pytest no longer collects it", PYTHON,
         weakened.renamed_out_of_collection),
    Rule(codes.CERTIFICATE_MISMATCH, "certificate-mismatch", L1, ERR,
         "a certificate does not match the test it covers", PYTHON, weakened.certificate_mismatch),
    Rule(codes.SKIP_ADDED, "skip-added", L1, ERR,
         "a test is newly skipped", PYTHON, weakened.skip_added),
    Rule(codes.FAILURE_SWALLOWED, "failure-swallowed", L1, ERR,
         "an assertion can no longer fail", PYTHON, weakened.failure_swallowed),
    Rule(codes.XFAIL_ADDED, "xfail-added", L1, ERR, "a test is newly expected to fail", PYTHON,
         weakened.xfail_added),
    Rule(codes.BASELINE_UNPARSABLE, "baseline-unparsable", L1, ERR,
         "the test file's baseline does not parse", PYTHON, weakened.baseline_unparsable),
    Rule(codes.TEST_INPUT_CHANGED, "test-input-changed", L1, ERR,
         "an assertion is fed other data than at the baseline", PYTHON,
         weakened.test_input_changed),
    Rule(codes.TEST_CONFIG_TAMPERED, "test-config-tampered", L1, ERR,
         "pytest configuration runs fewer tests", TEXT, tampering.test_config_tampered),
    Rule(codes.OUTCOME_FORGING_HOOK, "outcome-forging-hook", L1, ERR,
         "a conftest hook can forge outcomes or drop tests", PYTHON,
         tampering.outcome_forging_hook),
    Rule(codes.EXIT_IN_TESTS, "exit-in-tests", L1, ERR, "tests exit the process early", PYTHON,
         tampering.exit_in_tests),
    Rule(codes.SPECIAL_CASED_TEST_INPUT, "special-cased-test-input", L1, ERR,
         "source special-cases a test's input", PYTHON, under_test.special_cased_test_input),
    Rule(codes.SOURCE_FITTED_TO_TEST, "source-fitted-to-test", L1, ERR,
         "new code says it is there for a test", PYTHON, under_test.source_fitted_to_test),
    Rule(codes.SOURCE_MOVED_TO_TEST, "source-moved-to-test", L2, ERR,
         "a test passes only by a value the change wrote into the code", MODEL_LAYER,
         under_test.source_moved_to_test),
    Rule(codes.ALWAYS_EQUAL_OVERRIDE, "always-equal-override", L1, ERR,
         "__eq__/__hash__ returns a constant", PYTHON, under_test.always_equal_override),
    Rule(codes.TESTED_FUNCTION_MONKEYPATCHED, "tested-function-monkeypatched", L1, ERR,
         "a test monkeypatches the function it tests", PYTHON,
         weakened.tested_function_monkeypatched),
    # ---- L2 judge and L3 review (reported by referee.checks.judge.core)
    Rule("REF401", "judge-rejected", L2, ERR, "the judge rejects it", MODEL_LAYER,
         judge.judge_rejected),
    Rule("REF402", "needs-human-review", L3, INFO, "needs human review", MODEL_LAYER,
         judge.needs_human_review),
    Rule("REF403", "review-rejected", L3, ERR, "rejected in human review", MODEL_LAYER,
         judge.review_rejected),
    # ---- L2 execution checks (reported by referee.checks.execution.run)
    Rule("REF410", "test-kills-no-mutant", L2, WARN,
         "the test kills none of its target's mutants", MODEL_LAYER,
         execution.test_kills_no_mutant),
    Rule("REF411", "spec-counterexample", L2, ERR,
         "a counterexample to the function's spec", MODEL_LAYER,
         execution.spec_counterexample),
    Rule("REF412", "spec-ambiguous", L3, INFO,
         "independent readings of the spec disagree", MODEL_LAYER,
         execution.spec_ambiguous),
)
# fmt: on

BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}
GUARD_CODES = frozenset(rule.code for rule in RULES if rule.code.startswith("REF3"))
MODEL_CODES = frozenset(rule.code for rule in RULES if rule.layer in (L2, L3))


def lookup(code_or_name: str) -> Rule | None:
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())


def matching(selector: str) -> list[Rule]:
    """Rules a selector names: ``ALL``, a code (``REF101``) or a prefix (``REF1``)."""
    selector = selector.upper()
    if selector == "ALL":
        return list(RULES)
    return [rule for rule in RULES if rule.code.startswith(selector)]
