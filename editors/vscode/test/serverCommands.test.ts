import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  announces,
  isUnknownCommandError,
  outcome,
  parseArbitration,
  parseReviewItems,
  reviewPickRow,
  UnsupportedCommand,
} from '../src/serverCommands';

describe('unsupported commands', () => {
  it('is told by the server not announcing the command', () => {
    assert.equal(announces(['referee.checkWorkspace'], 'referee.review.list'), false);
    assert.equal(announces(undefined, 'referee.checkWorkspace'), false);
    assert.equal(announces(['referee.checkWorkspace'], 'referee.checkWorkspace'), true);
  });

  it("is told by pygls's answer or method-not-found, not by a command's own failure", () => {
    const pygls = { code: -32602, message: "Command name 'referee.review.list' is not defined" };
    assert.equal(isUnknownCommandError(pygls, 'referee.review.list'), true);
    assert.equal(isUnknownCommandError({ code: -32601, message: 'Unhandled method' }, 'referee.arbitrate'), true);
    assert.equal(isUnknownCommandError({ code: -32603, message: 'no failing test at line 3' }, 'referee.arbitrate'), false);
    assert.equal(isUnknownCommandError(pygls, 'referee.arbitrate'), false);
    assert.equal(isUnknownCommandError('boom', 'referee.arbitrate'), false);
  });

  it('names the feature, the command and the version', () => {
    assert.equal(
      new UnsupportedCommand('referee.review.list', '0.1.0').message,
      'referee 0.1.0 does not support the review queue (referee.review.list). Update referee to use it.',
    );
    assert.match(new UnsupportedCommand('referee.arbitrate', undefined).message, /^This referee version does not support arbitrating/);
  });
});

describe('review queue', () => {
  // What referee.review.list answers: ReviewItem (checks/models.py) as JSON, plus its uri.
  const served = {
    id: '3f9a0c12ab45',
    kind: 'judge',
    path: 'tests/test_x.py',
    line: 12,
    subject: 'test_total',
    content_sha256: 'ab'.repeat(32),
    title: 'test_total may check nothing',
    reasons: ['perspectives disagree', 'low confidence'],
    evidence: [],
    created: '2026-11-30T00:00:00+00:00',
    decision: null,
    uri: 'file:///p/tests/test_x.py',
  };
  const item = {
    id: '3f9a0c12ab45',
    path: 'tests/test_x.py',
    uri: 'file:///p/tests/test_x.py',
    line: 12,
    kind: 'judge',
    title: 'test_total may check nothing',
    reasons: ['perspectives disagree', 'low confidence'],
  };

  it("reads the server's items, as a list or an object with items", () => {
    assert.deepEqual(parseReviewItems([served]), [item]);
    assert.deepEqual(parseReviewItems({ items: [{ id: 7, path: 'a.py' }] }), [
      { id: '7', path: 'a.py', uri: undefined, line: undefined, kind: undefined, title: '(untitled)', reasons: [] },
    ]);
  });

  it('rejects an answer that is not a queue instead of showing it empty', () => {
    assert.throws(() => parseReviewItems(null), /not a list of review items/);
    assert.throws(() => parseReviewItems([{ path: 'a.py' }]), /item 0 has no id or path/);
  });

  it('shows title, place, kind and reasons in the quick pick', () => {
    assert.deepEqual(reviewPickRow(item), {
      label: 'test_total may check nothing',
      description: 'tests/test_x.py:12',
      detail: 'judge · perspectives disagree · low confidence',
    });
  });

  it("reports a decision's failure with the server's reason", () => {
    assert.deepEqual(outcome({ ok: true, id: 'x', decision: 'accepted' }, 'accepted.'), { ok: true, text: 'accepted.' });
    assert.deepEqual(outcome({ ok: false, message: "no review item 'x'" }, 'accepted.'), {
      ok: false,
      text: "no review item 'x'",
    });
    assert.deepEqual(outcome({ ok: false }, 'accepted.'), { ok: false, text: 'the server gave no reason' });
  });
});

describe('arbitration answers', () => {
  const edit = { changes: { 'file:///p/tests/test_x.py': [] } };
  const verdict = { verdict: 'test-wrong', reason: 'the oracles agree on 5' };

  it('says nothing more when the server has shown its verdict', () => {
    assert.deepEqual(parseArbitration({ ok: true, verdict, applied: false }), { kind: 'none' });
  });

  it('says that the fix was applied, with its certificate', () => {
    assert.deepEqual(parseArbitration({ ok: true, verdict, applied: true, certificate: 'c-12' }), {
      kind: 'message',
      text: 'the fix was applied (certificate c-12).',
      ok: true,
    });
  });

  it("shows the server's message, as a warning when arbitration failed", () => {
    assert.deepEqual(parseArbitration({ ok: false, message: 'no test at line 3 of test_x.py' }), {
      kind: 'message',
      text: 'no test at line 3 of test_x.py',
      ok: false,
    });
    assert.deepEqual(parseArbitration({ ok: true, verdict, applied: false, message: 'test_x.py changed during arbitration; run it again' }), {
      kind: 'message',
      text: 'test_x.py changed during arbitration; run it again',
      ok: true,
    });
  });

  it('offers an edit the answer carries, bare or with a title', () => {
    assert.deepEqual(parseArbitration(edit), { kind: 'edit', edit, title: 'referee proposes an edit.' });
    assert.deepEqual(parseArbitration({ edit, title: 'Fix the test?' }), { kind: 'edit', edit, title: 'Fix the test?' });
  });

  it('says so when the answer is not one of these', () => {
    assert.deepEqual(parseArbitration(null), { kind: 'message', text: 'referee answered without a verdict: null', ok: false });
    assert.equal(parseArbitration({ something: 1 }).kind, 'message');
  });
});
