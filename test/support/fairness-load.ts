/**
 * The fairness load, shared by test/e2e/fairness.test.ts and bench/fairness.ts: one organization
 * sends one large request (N inputs of 512 tokens each) through the gateway while another sends
 * one-line requests back to back; what each small request waited is recorded.
 */
import { readFileSync } from 'node:fs';
import { waitFor } from './process.js';
import type { Stack } from './stack.js';
import type { GatewayResponse } from './stack-client.js';

/** One small request as the client saw it. */
interface SmallSample {
  readonly status: number;
  readonly ms: number;
  /** The gateway's own x-queue-time and x-inference-time (ms), when present. */
  readonly queueMs: number | undefined;
  readonly inferenceMs: number | undefined;
}

/** What one run measured. */
export interface FairnessRun {
  readonly big: { readonly status: number; readonly ms: number; readonly inputs: number; readonly tokens: number };
  readonly small: readonly SmallSample[];
}

/** 510 one-token words: with [CLS] and [SEP], exactly 512 tokens, in about 1 KB (1,000 fit in 1 MiB). */
const LONGEST_INPUT = Array.from({ length: 510 }, () => 'a').join(' ');

/** POSTs an embeddings request with `key`. */
export function postEmbeddings(stack: Stack, key: string, input: string | string[]): Promise<GatewayResponse> {
  return stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: stack.svc.modelId, input, encoding_format: 'base64' }),
  });
}

/** Inputs waiting in the embedder's queue, from its internal /metrics. */
async function queuedInputs(stack: Stack): Promise<number> {
  const token = readFileSync(stack.dirs.metricsTokenFile, 'utf8').trim();
  const text = await (
    await fetch(`http://127.0.0.1:${stack.ports.embedder}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  ).text();
  const match = /^embedder_queue_inputs (\d+)/m.exec(text);
  return match ? Number(match[1]) : 0;
}

const header = (res: GatewayResponse, name: string): number | undefined =>
  res.headers[name] === undefined ? undefined : Number(res.headers[name]);

/**
 * Sends the large request for `bigKey`, waits until its inputs are queued, then has `whileBusy`
 * run (the test's extra checks) and sends one-line requests for `smallKey` until it finishes.
 */
export async function bigAgainstSmall(
  stack: Stack,
  bigKey: string,
  smallKey: string,
  bigInputs: number,
  whileBusy: () => Promise<void> = async () => undefined,
): Promise<FairnessRun> {
  const started = performance.now();
  let bigDone = false;
  const big = postEmbeddings(
    stack,
    bigKey,
    Array.from({ length: bigInputs }, () => LONGEST_INPUT),
  ).then((res) => {
    bigDone = true;
    return { res, ms: performance.now() - started };
  });
  big.catch(() => (bigDone = true));
  await waitFor('the large request to be queued', async () => bigDone || (await queuedInputs(stack)) > 0, 60_000);
  await whileBusy();
  const small: SmallSample[] = [];
  while (!bigDone) {
    const sent = performance.now();
    const res = await postEmbeddings(stack, smallKey, 'Patient denies chest pain.');
    small.push({
      status: res.status,
      ms: performance.now() - sent,
      queueMs: header(res, 'x-queue-time'),
      inferenceMs: header(res, 'x-inference-time'),
    });
  }
  const { res, ms } = await big;
  const tokens = res.status === 200 ? Number(res.json().usage.total_tokens) : 0;
  return { big: { status: res.status, ms, inputs: bigInputs, tokens }, small };
}

/** The p-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
