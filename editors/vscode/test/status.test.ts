import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseStatus, StatusModel } from '../src/status';

function running(): StatusModel {
  const model = new StatusModel();
  model.setServerState('running', '0.1.0');
  return model;
}

describe('status bar', () => {
  it('shows referee idle, and opens the review queue on click', () => {
    const view = running().view();
    assert.equal(view.text, '$(check) referee');
    assert.equal(view.command, 'referee.openReviewQueue');
    assert.match(view.tooltip, /referee 0\.1\.0/);
  });

  it("spins with the progress's title and message while the server works", () => {
    const model = running();
    model.onProgress('t1', { kind: 'begin', title: 'referee: checking', percentage: 0 });
    assert.equal(model.view().text, '$(sync~spin) referee: checking');
    model.onProgress('t1', { kind: 'report', message: '11/250 files', percentage: 4 });
    assert.equal(model.view().text, '$(sync~spin) referee: checking 11/250 files');
    model.onProgress('t1', { kind: 'end', message: '250 files, 31 findings' });
    assert.equal(model.view().text, '$(check) referee');
  });

  it('shows the latest of two runs, then the other when it ends', () => {
    const model = running();
    model.onProgress(1, { kind: 'begin', title: 'referee: checking' });
    model.onProgress(2, { kind: 'begin', title: 'judging tests/test_x.py' });
    assert.equal(model.view().text, '$(sync~spin) referee: judging tests/test_x.py');
    assert.match(model.view().tooltip, /referee: checking\njudging tests\/test_x\.py/);
    model.onProgress(2, { kind: 'end' });
    assert.equal(model.view().text, '$(sync~spin) referee: checking');
  });

  it('counts the items waiting for review from referee/status', () => {
    const model = running();
    model.onStatus({ reviewPending: 3, judge: 'idle', arbitration: 'idle' });
    assert.equal(model.view().text, '$(check) referee $(inbox) 3');
    assert.match(model.view().tooltip, /3 items wait for your review/);
    model.onStatus({ reviewPending: 0 });
    assert.equal(model.view().text, '$(check) referee');
  });

  it('spins for the judge and arbitration that referee/status reports running', () => {
    const model = running();
    model.onStatus({ reviewPending: 1, judge: 'running' });
    assert.equal(model.view().text, '$(sync~spin) referee: judging $(inbox) 1');
    model.onStatus({ judge: 'idle', arbitration: 'running' });
    assert.equal(model.view().text, '$(sync~spin) referee: arbitrating $(inbox) 1');
  });

  it('warns while the model process is down, and stops when it answers again', () => {
    const model = running();
    model.onStatus({ judge: 'idle', model: 'crashed', modelMessage: 'the model process crashed: signal 11 (SIGSEGV)' });
    assert.equal(model.view().text, '$(check) referee $(warning)');
    assert.match(model.view().tooltip, /crashed: signal 11 \(SIGSEGV\)\. L0\/L1 go on/);
    model.onStatus({ model: 'ok' });
    assert.equal(model.view().text, '$(check) referee');
  });

  it('keeps what it knew when a notification carries bad fields', () => {
    const model = running();
    model.onStatus({ reviewPending: 2 });
    model.onStatus({ reviewPending: '5', judge: 'busy' });
    model.onStatus(null);
    assert.equal(model.view().text, '$(check) referee $(inbox) 2');
  });

  it('shows a failed server with its reason, and the log on click', () => {
    const model = running();
    model.onProgress('t', { kind: 'begin', title: 'referee: checking' });
    model.onStatus({ reviewPending: 4 });
    model.setServerState('failed', 'referee is not installed for python3');
    const view = model.view();
    assert.equal(view.text, '$(error) referee');
    assert.equal(view.command, 'referee.showOutput');
    assert.match(view.tooltip, /not installed for python3/);
    model.setServerState('running', '0.1.0');
    assert.equal(model.view().text, '$(check) referee', 'a new server starts with no progress and no count');
  });
});

describe('parseStatus', () => {
  it('keeps valid fields and drops the rest', () => {
    assert.deepEqual(parseStatus({ reviewPending: 2, judge: 'running', arbitration: 'sometimes', extra: 1 }), {
      reviewPending: 2,
      judge: 'running',
    });
    assert.deepEqual(parseStatus({ reviewPending: -1 }), {});
    assert.deepEqual(parseStatus({ reviewPending: 1.5 }), {});
  });
});
