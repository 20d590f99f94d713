/**
 * The default batch budget (embedder/src/core/batch-budget.ts): the model's length × 2 rows per
 * ORT thread of a session, within 2 to 16 rows; and the engine uses it when BATCH_MAX_TOKENS is unset.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../contract/repo-root.js';
import { loadConfig } from '../../embedder/src/config.js';
import { BATCH_ROWS, defaultBatchMaxTokens } from '../../embedder/src/core/batch-budget.js';
import { loadEngine } from '../../embedder/src/core/engine.js';

/** What every embedder must be given (config.test.ts): a grant secret, and no Redis is asked here. */
const GRANT = { GRANT_SECRET: 'embedder-batch-budget-test-secret-0123456789', REDIS_URL_FILE: '/nonexistent/redis-url' };

describe('defaultBatchMaxTokens', () => {
  it('holds 2 full-length rows per thread: 4 notes of 512 tokens on 2 threads, 8 on 4', () => {
    expect(defaultBatchMaxTokens(512, 2)).toBe(2_048);
    expect(defaultBatchMaxTokens(512, 4)).toBe(4_096);
    expect(defaultBatchMaxTokens(512, 3)).toBe(512 * 6);
    expect(defaultBatchMaxTokens(256, 4)).toBe(2_048);
  });

  it('keeps 2 rows on one thread and at most 16 on many, whatever the model length', () => {
    expect(defaultBatchMaxTokens(512, 1)).toBe(1_024);
    expect(defaultBatchMaxTokens(512, 1)).toBe(512 * BATCH_ROWS.min);
    expect(defaultBatchMaxTokens(512, 0)).toBe(512 * BATCH_ROWS.min);
    expect(defaultBatchMaxTokens(512, 64)).toBe(512 * BATCH_ROWS.max);
    expect(defaultBatchMaxTokens(8_192, 4)).toBe(8_192 * 8);
    // Always room for one input of the model's full length.
    for (const threads of [1, 2, 4, 16]) expect(defaultBatchMaxTokens(128, threads)).toBeGreaterThanOrEqual(128);
  });
});

describe('the engine, BATCH_MAX_TOKENS unset or set (test model, 512 tokens)', () => {
  const note = Array.from({ length: 400 }, (_, i) => `word${i % 50}`).join(' ');

  async function callSizes(env: Record<string, string>): Promise<number[]> {
    const config = loadConfig({
      ...GRANT,
      MODEL_DIR: join(repoRoot, '.local/models/test'),
      MODEL_SESSIONS: '1',
      ORT_INTRA_OP_THREADS: '2',
      ...env,
    });
    const sizes: number[] = [];
    const { engine, ready } = loadEngine(config, { onBatch: (stats) => sizes.push(stats.size) });
    try {
      await ready;
      const outcome = await engine.embed({
        tenant: 'acme',
        inputs: Array.from({ length: 8 }, () => note),
        inputType: undefined,
        policy: { kind: 'keep', tokens: 512 },
      });
      expect(outcome.kind).toBe('embedded');
      return sizes;
    } finally {
      await engine.close();
    }
  }

  it('puts 8 long notes in two calls of 4 on 2 threads and in one on 4 when unset, and keeps an explicit budget', async () => {
    expect(await callSizes({})).toEqual([4, 4]);
    expect(await callSizes({ ORT_INTRA_OP_THREADS: '4' })).toEqual([8]);
    expect(await callSizes({ BATCH_MAX_TOKENS: '4096' })).toEqual([8]);
  });

  it('gives each of two one-thread sessions calls of 2 long notes, side by side', async () => {
    const sizes = await callSizes({ MODEL_SESSIONS: '2', ORT_INTRA_OP_THREADS: '1' });
    expect(sizes).toEqual([2, 2, 2, 2]);
  });
});
