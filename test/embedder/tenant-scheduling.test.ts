/**
 * Fair scheduling through the embedder app with the generated test model and a real in-process
 * authz: the organization (x-gateway-org-id, set by authz) picks the queue, each has its own
 * share, and every 200 carries the timing headers.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { timingHeaders } from '../../embedder/src/http/timing-headers.js';
import { addKey, addOrg } from '../authz/fixtures.js';
import {
  testGrant,
  TEST_MODEL_ID,
  ensureTestModel,
  metricValue,
  scrapeMetrics,
  startTestEmbedder,
  type TestEmbedder,
} from '../support/embedder-app.js';

/** A second organization beside testGrant's, with its own key. */
const SMALL_ORG = 'org-small';
const SMALL_KEY = 'SMALLKEYIDAA';
const smallGrant = () => testGrant({ org: SMALL_ORG, key: SMALL_KEY });

const post = (embedder: TestEmbedder, grant: Record<string, string>, input: string[]) =>
  embedder.app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    headers: grant,
    payload: { model: TEST_MODEL_ID, input, encoding_format: 'base64' },
  });

describe('timingHeaders', () => {
  it('writes whole, non-negative milliseconds', () => {
    expect(timingHeaders({ tokenizeMs: 0.4, queueMs: 12.5, inferenceMs: 1234.49 })).toEqual({
      'x-tokenization-time': '0',
      'x-queue-time': '13',
      'x-inference-time': '1234',
    });
    expect(timingHeaders({ tokenizeMs: -0.2, queueMs: 0, inferenceMs: 0 })['x-tokenization-time']).toBe('0');
  });
});

describe('two organizations, one model', () => {
  let embedder: TestEmbedder;
  beforeAll(async () => {
    // One input a batch and a share of 10 inputs, so one organization's backlog is easy to make.
    embedder = await startTestEmbedder(ensureTestModel(), {
      env: { BATCH_MAX_SIZE: '1', QUEUE_TENANT_MAX_INPUTS: '10', RETRY_AFTER_SECONDS: '3' },
    });
    await addOrg(embedder.authz.store, SMALL_ORG);
    await addKey(embedder.authz.store, SMALL_ORG, { id: SMALL_KEY });
  });
  afterAll(async () => embedder?.close());

  it("serves another organization's small request before a large backlog, and refuses only the organization past its share", async () => {
    let bigDone = false;
    // Over the share of 10, admitted because the organization had nothing queued.
    const big = post(
      embedder,
      testGrant(),
      // The most inputs a request may carry: the backlog must outlast the two requests below
      // on a loaded machine (300 drained before them in a full run at load 10).
      Array.from({ length: 1000 }, (_, i) => `note ${i}`),
    ).then((res) => {
      bigDone = true;
      return res;
    });
    await vi.waitFor(async () => {
      expect(metricValue(await scrapeMetrics(embedder.app), 'embedder_queue_inputs')).toBeGreaterThan(10);
    });
    // Both at once: the other organization's request must not wait for this refusal either.
    const [refused, small] = await Promise.all([
      post(embedder, testGrant(), ['one more']),
      post(embedder, smallGrant(), ['Patient denies chest pain.']),
    ]);
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'overloaded' });
    // The drain time of the organization's queued work (issue 25), not RETRY_AFTER_SECONDS.
    const ms = Number(refused.headers['retry-after-ms']);
    expect(ms).toBeGreaterThan(0);
    expect(refused.headers['retry-after']).toBe(String(Math.max(1, Math.ceil(ms / 1000))));

    expect(small.statusCode).toBe(200);
    expect(bigDone).toBe(false); // served within a batch or two, not after the 1,000-input backlog
    for (const name of ['x-tokenization-time', 'x-queue-time', 'x-inference-time']) {
      expect(small.headers[name], name).toMatch(/^\d+$/);
    }
    const done = await big;
    expect(done.statusCode).toBe(200);
    expect(done.json().data).toHaveLength(1000);
    expect(Number(done.headers['x-inference-time'])).toBeGreaterThanOrEqual(Number(small.headers['x-inference-time']));
  });
});
