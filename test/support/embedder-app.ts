/**
 * Builds the embedder app around a real model directory for tests: the generated test model
 * (made on demand, well under a second) or the installed default model, with a real in-process
 * authz (gRPC on port 0, Redis under its own prefix) answering its Admission calls.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { buildApp } from '../../embedder/src/app.js';
import { loadConfig } from '../../embedder/src/config.js';
import { loadEngine, type EmbeddingEngine } from '../../embedder/src/engine.js';
import { createEmbedderMetrics } from '../../embedder/src/metrics.js';
import { createAdmissionClient } from '../../embedder/src/admission-client.js';
import type { AuthzConfig } from '../../authz/src/config.js';
import { addKey, addOrg } from '../authz/fixtures.js';
import { startAuthz, testConfig, type RunningAuthz } from './grpc-authz.js';
import { testPrefix } from './redis-store.js';

export const TEST_MODEL_DIR = resolve('.local/models/test');
export const DEFAULT_MODEL_DIR = resolve('.local/models/default');
export const TEST_MODEL_ID = 'test-bert-1024';
export const TEST_ORG = 'test-org';
export const TEST_KEY_ID = 'TESTKEYIDAAA';
/** authz's identity headers and grant of the test model, as the gateway adds them to a request it lets through. */
export const TEST_GRANT: Readonly<Record<string, string>> = Object.freeze({
  'x-gateway-model': TEST_MODEL_ID, 'x-gateway-org-id': TEST_ORG, 'x-gateway-key-id': TEST_KEY_ID,
});

/** Makes sure the generated test model exists (runs scripts/generate-test-model.ts if not). */
export function ensureTestModel(): string {
  const complete = ['model.onnx', 'tokenizer.json', 'manifest.json'].every((f) => existsSync(resolve(TEST_MODEL_DIR, f)));
  if (!complete) execFileSync('npx', ['tsx', 'scripts/generate-test-model.ts', TEST_MODEL_DIR], { stdio: 'pipe' });
  return TEST_MODEL_DIR;
}

export interface TestEmbedder {
  readonly app: FastifyInstance;
  readonly engine: EmbeddingEngine;
  /** The authz behind the embedder's Admission calls (its store holds the usage records). */
  readonly authz: RunningAuthz;
  close(): Promise<void>;
}

/** A real in-process authz whose store holds TEST_ORG and its key TEST_KEY_ID (TEST_GRANT's identity). */
export async function startTestAuthz(overrides: Partial<AuthzConfig> = {}): Promise<RunningAuthz> {
  const authz = await startAuthz(testConfig(testPrefix(), { modelId: TEST_MODEL_ID, ...overrides }));
  await addOrg(authz.store, TEST_ORG);
  await addKey(authz.store, TEST_ORG, { id: TEST_KEY_ID });
  return authz;
}

/** Builds the app on `modelDir` with extra env settings, waits for the model, returns it. */
export async function startTestEmbedder(
  modelDir: string,
  options: { env?: Record<string, string>; logStream?: DestinationStream; now?: () => number; authz?: Partial<AuthzConfig> } = {},
): Promise<TestEmbedder> {
  const authz = await startTestAuthz(options.authz);
  const config = loadConfig({ MODEL_DIR: modelDir, LOG_LEVEL: 'info', ORT_INTRA_OP_THREADS: '2', AUTHZ_ADDRESS: authz.address, ...options.env });
  const metrics = createEmbedderMetrics();
  const { engine, ready } = loadEngine(config, { onBatch: metrics.observeBatch });
  const admission = createAdmissionClient({ address: config.authzAddress, timeoutMs: config.admissionTimeoutMs, recordAttempts: config.admissionRecordAttempts });
  const app = buildApp({
    config,
    engine,
    metrics,
    admission,
    ...(options.logStream ? { logStream: options.logStream } : { config: { ...config, logLevel: 'silent' } }),
    ...(options.now ? { now: options.now } : {}),
  });
  await ready;
  return {
    app,
    engine,
    authz,
    async close() {
      await app.close();
      admission.close();
      await engine.close();
      await authz.store.purge();
      await authz.stop();
    },
  };
}

/** Collects every log line written during a test. */
export function captureLogs(): { stream: DestinationStream; text(): string } {
  const lines: string[] = [];
  return { stream: { write: (line: string) => void lines.push(line) }, text: () => lines.join('') };
}

/**
 * The value of one sample in a Prometheus text exposition: the line named `name` whose labels
 * are exactly `labels` (in any order); undefined when there is none.
 */
export function metricValue(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]);
    if (JSON.stringify(found.sort()) === want) return Number(match[3]);
  }
  return undefined;
}

/** Scrapes the app's GET /metrics. */
export async function scrapeMetrics(app: FastifyInstance): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  if (res.statusCode !== 200) throw new Error(`GET /metrics answered ${res.statusCode}`);
  return res.body;
}
