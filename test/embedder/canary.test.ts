/** Clinical text must never reach a log line, an error body or /metrics: a canary sentence proves it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TEST_MODEL_ID,
  captureLogs,
  ensureTestModel,
  scrapeMetrics,
  startTestEmbedder,
  type TestEmbedder,
} from '../support/embedder-app.js';

const CANARY = 'Canary patient Zebulon Quackenbush has xylophonitis';
let embedder: TestEmbedder;
const logs = captureLogs();

beforeAll(async () => {
  embedder = await startTestEmbedder(ensureTestModel(), { env: { LOG_LEVEL: 'trace' }, logStream: logs.stream });
});
afterAll(async () => embedder?.close());

describe('canary', () => {
  it('never appears in logs, error bodies or metrics, whatever the request', async () => {
    const long = `${CANARY} ${'a '.repeat(600)}`;
    const requests: Array<{ payload?: string; contentType?: string; url?: string; method?: 'GET' | 'POST' }> = [
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: CANARY }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: [CANARY, CANARY], input_type: 'query', encoding_format: 'base64' }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: long }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: long, truncate_prompt_tokens: -1 }) },
      { payload: JSON.stringify({ model: CANARY, input: CANARY }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: [CANARY, 7] }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: CANARY, input_type: CANARY }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: CANARY, encoding_format: CANARY }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: CANARY, [CANARY]: CANARY }) },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: CANARY, dimensions: 8 }) },
      { payload: `{"model": "${TEST_MODEL_ID}", "input": "${CANARY}"` },
      { payload: CANARY, contentType: 'text/plain' },
      { payload: JSON.stringify({ model: TEST_MODEL_ID, input: CANARY.repeat(30_000) }) },
      { payload: JSON.stringify({ input: CANARY }), url: `/v1/embeddings?note=${encodeURIComponent(CANARY)}` },
      { payload: JSON.stringify({ input: CANARY }), url: `/v2/${encodeURIComponent(CANARY)}` },
      { method: 'GET', url: `/${encodeURIComponent(CANARY)}?q=${encodeURIComponent(CANARY)}` },
      { method: 'GET', url: `/health?q=${encodeURIComponent(CANARY)}` },
    ];
    const bodies: string[] = [];
    for (const r of requests) {
      const res = await embedder.app.inject({
        method: r.method ?? 'POST',
        url: r.url ?? '/v1/embeddings',
        ...(r.payload === undefined ? {} : { payload: r.payload }),
        // Headers too: a client may put anything in them.
        headers: { 'content-type': r.contentType ?? 'application/json', 'user-agent': CANARY, 'x-clinical-note': CANARY },
      });
      if (res.statusCode !== 200) bodies.push(res.body);
    }
    expect(bodies.length).toBeGreaterThanOrEqual(10);
    expect(logs.text()).toContain('request completed'); // the capture works
    const metrics = await scrapeMetrics(embedder.app);
    expect(metrics).toContain('embedder_requests_total{'); // the requests were counted
    for (const fragment of [CANARY, 'Zebulon', 'xylophonitis', encodeURIComponent(CANARY)]) {
      expect(logs.text()).not.toContain(fragment);
      expect(metrics).not.toContain(fragment);
      for (const body of bodies) expect(body).not.toContain(fragment);
    }
  });
});
