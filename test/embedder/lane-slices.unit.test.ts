/**
 * A Batch API line's tokenizing runs in the CPU gate's short slices (cpu-gate.ts), and between
 * slices it waits for the online requests in flight: an online request that arrives while a long
 * line is tokenized waits for one slice, not for the whole line. An online request's own
 * tokenizing is not held back. The tokenizer is a fake that takes a millisecond an input.
 */
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../embedder/src/core/engine.js';
import type { ModelTokenizer } from '../../embedder/src/model/tokenizer.js';
import { readManifest } from '../../contract/model-manifest.js';
import { TEST_MODEL_ID, ensureTestModel } from '../support/embedder-app.js';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

function engineWith(onEncode: (count: number) => void) {
  let count = 0;
  const tokenizer: ModelTokenizer = {
    encode: () => {
      count += 1;
      onEncode(count);
      busy(1);
      return [101, 7, 102];
    },
    openingSpecialTokens: 1,
    closingSpecialTokens: 1,
  };
  const engine = createEngine({
    modelId: TEST_MODEL_ID,
    manifest: readManifest(ensureTestModel()),
    tokenizer,
    embedRows: async (rows) => rows.map(() => new Float32Array(1024)),
    limits: {
      maxBatchTokens: 16_384,
      maxBatchSize: 64,
      maxQueueInputs: 1_000,
      maxQueueTokens: 100_000,
      maxTenantInputs: 1_000,
      maxTenantTokens: 100_000,
    },
    isReady: () => true,
  });
  return { engine, encoded: () => count };
}

const inputs = Array.from({ length: 40 }, (_, i) => `line input ${i}`);
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('a batch line tokenized beside online requests', () => {
  it('pauses after a short slice while an online request is in flight, and goes on when it ends', async () => {
    let end: (() => void) | undefined;
    const { engine, encoded } = engineWith((count) => {
      // An online request arrives while the line's second input is tokenized.
      if (count === 2) end = engine.online.begin();
    });
    const line = engine.embed({ tenant: 'org', inputs, inputType: undefined, policy: { kind: 'reject' }, lane: 'batch' });
    await turns(5);
    // One slice of the gate's (about 2 ms of 1 ms inputs), not the 40 ms line.
    expect(encoded()).toBeGreaterThanOrEqual(2);
    expect(encoded()).toBeLessThanOrEqual(5);
    end!();
    const outcome = await line;
    expect(outcome.kind).toBe('embedded');
    expect(encoded()).toBe(40);
  });

  it("does not hold back an online request's own tokenizing", async () => {
    const { engine, encoded } = engineWith(() => undefined);
    engine.online.begin(); // another online request, still in flight
    const outcome = await engine.embed({ tenant: 'org', inputs, inputType: undefined, policy: { kind: 'reject' } });
    expect(outcome.kind).toBe('embedded');
    expect(encoded()).toBe(40);
  });
});
