/**
 * The Batch API through the fleet's faults (issue 27): during every scenario a batch runs on the
 * three embedders; once the fleet is whole again it must complete with every input custom_id
 * once in its output, and one usage record (kind batch) per line: nothing lost, nothing twice,
 * whatever died meanwhile (an embedder, authz, an Envoy, the Redis primary).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import type { GatewayTarget } from './load.js';

/** What one scenario's batch came to. */
export interface BatchCheck {
  readonly scenario: string;
  readonly batch: string;
  readonly lines: number;
  readonly status: string;
  /** Still running when the fault began: the fault hit it, not an idle queue. */
  readonly runningAtFault: boolean;
  readonly completed: number;
  readonly failed: number;
  readonly outputMissing: number;
  readonly outputDuplicates: number;
  readonly usageMissing: number;
  readonly usageDuplicates: number;
  readonly ok: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One batch's client: every call retried on the other gateway or after a 503, as an SDK would. */
export class FleetBatch {
  private next = 0;
  id = '';

  constructor(
    private readonly gateways: readonly GatewayTarget[],
    private readonly ca: Buffer,
    private readonly key: string,
  ) {}

  private once(g: GatewayTarget, method: string, path: string, body?: { type: string; data: Buffer }) {
    return new Promise<{ status: number; text: string }>((resolve) => {
      const req = request(
        {
          host: g.address,
          port: g.port,
          method,
          path,
          ca: this.ca,
          servername: 'localhost',
          timeout: 30_000,
          headers: { authorization: `Bearer ${this.key}`, ...(body ? { 'content-type': body.type } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', () => resolve({ status: 0, text: '' }));
        },
      );
      req.on('error', () => resolve({ status: 0, text: '' }));
      req.on('timeout', () => req.destroy());
      req.end(body?.data);
    });
  }

  /** Calls until an answer that is not a 503 or a lost connection (bounded); throws on anything but 200. */
  async call(method: string, path: string, body?: { type: string; data: Buffer }): Promise<string> {
    for (let attempt = 0; attempt < 60; attempt++) {
      const g = this.gateways[this.next++ % this.gateways.length] as GatewayTarget;
      const res = await this.once(g, method, path, body);
      if (res.status === 200) return res.text;
      if (res.status !== 0 && res.status !== 503) throw new Error(`${method} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
      await sleep(500);
    }
    throw new Error(`${method} ${path}: no answer`);
  }

  /** Uploads `lines` requests of `inputs` sentences each and creates the batch. */
  async start(modelId: string, lines: number, inputs: number): Promise<void> {
    const content = Array.from({ length: lines }, (_, i) =>
      JSON.stringify({
        custom_id: `c${i}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: modelId, input: Array.from({ length: inputs }, (_, j) => `Note ${i}.${j}: no acute distress.`) },
      }),
    ).join('\n');
    const boundary = `b${randomBytes(8).toString('hex')}`;
    const data = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="fleet.jsonl"\r\n\r\n${content}\r\n--${boundary}--\r\n`,
    );
    const file = JSON.parse(await this.call('POST', '/v1/files', { type: `multipart/form-data; boundary=${boundary}`, data })) as {
      id: string;
    };
    const create = Buffer.from(JSON.stringify({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' }));
    this.id = (JSON.parse(await this.call('POST', '/v1/batches', { type: 'application/json', data: create })) as { id: string }).id;
  }

  async status(): Promise<{ status: string; output_file_id?: string; request_counts: { completed: number; failed: number } }> {
    return JSON.parse(await this.call('GET', `/v1/batches/${this.id}`));
  }

  /** Waits for the batch to end (bounded) and checks its output and usage against its input. */
  async check(
    scenario: string,
    lines: number,
    runningAtFault: boolean,
    usageIds: (batch: string) => Promise<string[]>,
    waitMs: number,
  ): Promise<BatchCheck> {
    const until = Date.now() + waitMs;
    let batch = await this.status();
    while (!['completed', 'failed', 'cancelled', 'expired'].includes(batch.status) && Date.now() < until) {
      await sleep(1_000);
      batch = await this.status();
    }
    const output = batch.status === 'completed' ? await this.outputIds(batch) : [];
    const usage = await usageIds(this.id);
    const missing = (ids: readonly string[], want: (i: number) => string) =>
      Array.from({ length: lines }, (_, i) => want(i)).filter((id) => !ids.includes(id)).length;
    const duplicates = (ids: readonly string[]) => ids.length - new Set(ids).size;
    const result = {
      scenario,
      batch: this.id,
      lines,
      status: batch.status,
      runningAtFault,
      completed: batch.request_counts.completed,
      failed: batch.request_counts.failed,
      outputMissing: missing(output, (i) => `c${i}`),
      outputDuplicates: duplicates(output),
      usageMissing: missing(usage, (i) => `${this.id}:${i}`),
      usageDuplicates: duplicates(usage),
    };
    const ok =
      result.status === 'completed' &&
      result.completed === lines &&
      result.outputMissing + result.outputDuplicates + result.usageMissing + result.usageDuplicates === 0;
    return { ...result, ok };
  }

  private async outputIds(batch: { output_file_id?: string }): Promise<string[]> {
    if (!batch.output_file_id) return [];
    const text = await this.call('GET', `/v1/files/${batch.output_file_id}/content`);
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { custom_id: string }).custom_id);
  }
}

/** One line per scenario for the table. */
export function batchTable(checks: readonly BatchCheck[]): string {
  const rows = checks.map(
    (c) =>
      `${c.ok ? 'ok  ' : 'FAIL'} ${c.scenario.padEnd(28)} ${c.status.padEnd(10)} ${String(c.completed).padStart(6)}/${c.lines} lines` +
      `  output missing ${c.outputMissing} twice ${c.outputDuplicates}  usage missing ${c.usageMissing} twice ${c.usageDuplicates}` +
      `${c.runningAtFault ? '' : '  (ended before the fault)'}`,
  );
  return ['Batch through each fault (every custom_id once in the output, one usage record per line):', ...rows].join('\n');
}
