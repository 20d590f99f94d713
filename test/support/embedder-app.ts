/**
 * Builds the embedder app around a real model directory for tests: the generated test model
 * (made on demand, well under a second) or the installed default model, settling on the real
 * Redis under a test prefix, beside a real in-process authz (gRPC on port 0) on the same prefix
 * whose store holds the organizations and reads the usage.
 */
import { modelFingerprint, modelInstalledAt } from '../../embedder/src/model/fingerprint.js';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { buildApp } from '../../embedder/src/http/app.js';
import { loadConfig } from '../../embedder/src/config.js';
import { loadEngine, type EmbeddingEngine } from '../../embedder/src/core/engine.js';
import { createEmbedderMetrics, measureSettlement } from '../../embedder/src/telemetry/metrics.js';
import { openSettlementStore, type SettlementStore } from '../../embedder/src/settlement/store.js';
import type { GrantClaims } from '../../contract/grant.js';
import type { AuthzConfig } from '../../authz/src/config.js';
import { addKey, addOrg } from '../authz/fixtures.js';
import { startAuthz, testConfig, type RunningAuthz } from './grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from './redis-store.js';
import { grantHeader, issueGrant, issuingGrants, testClaims, TEST_GRANT_SECRET } from './settlement.js';
import { GRANT_HEADER } from '../../contract/headers.js';
import { signGrant, verifyGrant } from '../../contract/grant.js';
import { startBatchService, type BatchService } from '../../embedder/src/batch/service.js';
import { batchLineExecutor } from '../../embedder/src/http/batch-line.js';
import { parseJsonBody } from '../../embedder/src/http/json-body.js';

const TEST_MODEL_DIR = resolve('.local/models/test');
export const DEFAULT_MODEL_DIR = resolve('.local/models/default');
export const TEST_MODEL_ID = 'test-bert-1024';
const TEST_ORG = 'test-org';
const TEST_KEY_ID = 'TESTKEYIDAAA';
/**
 * authz's signed grant of the test model for one request (a fresh uid each call), with the
 * informational identity headers, as the gateway adds them to a request it lets through.
 */
export function testGrant(claims: Partial<GrantClaims> = {}): Record<string, string> {
  const full = { org: TEST_ORG, key: TEST_KEY_ID, model: TEST_MODEL_ID, ...claims };
  return { ...grantHeader(full), 'x-gateway-org-id': full.org, 'x-gateway-key-id': full.key };
}

/** testGrant's headers with its grant record written, as authz's Check would (for embedders outside the harness). */
export async function issuedTestGrant(prefix: string, claims: Partial<GrantClaims> = {}): Promise<Record<string, string>> {
  const full = testClaims({ org: TEST_ORG, key: TEST_KEY_ID, model: TEST_MODEL_ID, ...claims });
  await issueGrant(prefix, full);
  return { ...grantHeader(full), 'x-gateway-org-id': full.org, 'x-gateway-key-id': full.key };
}

/** Makes sure the generated test model exists (runs scripts/generate-test-model.ts if not). */
export function ensureTestModel(): string {
  const complete = ['model.onnx', 'tokenizer.json', 'manifest.json'].every((f) => existsSync(resolve(TEST_MODEL_DIR, f)));
  if (!complete) execFileSync('npx', ['tsx', 'scripts/generate-test-model.ts', TEST_MODEL_DIR], { stdio: 'pipe' });
  return TEST_MODEL_DIR;
}

export interface TestEmbedder {
  readonly app: FastifyInstance;
  readonly engine: EmbeddingEngine;
  /** An authz on the embedder's Redis prefix (its store holds the organizations and reads the usage records). */
  readonly authz: RunningAuthz;
  /** The Batch API's parts, when the test asked for them (BATCH_KEK in `env`). */
  readonly batch?: BatchService;
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
  options: {
    env?: Record<string, string>;
    logStream?: DestinationStream;
    now?: () => number;
    authz?: Partial<AuthzConfig>;
    /** Wraps the settlement store (a test that must act between its calls). */
    wrapSettlement?: (store: SettlementStore) => SettlementStore;
    /** True once a graceful stop began (/ready answers 503), as main.ts tells the app. */
    draining?: () => boolean;
    /** Told of the batch workers' faults. */
    onBatchError?: (error: unknown) => void;
  } = {},
): Promise<TestEmbedder> {
  const authz = await startTestAuthz(options.authz);
  const config = loadConfig({
    MODEL_DIR: modelDir,
    LOG_LEVEL: 'info',
    MODEL_SESSIONS: '2',
    ORT_INTRA_OP_THREADS: '1',
    GRANT_SECRET: TEST_GRANT_SECRET,
    METRICS_TOKEN: TEST_METRICS_TOKEN,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: authz.store.connection.keys.prefix,
    ...options.env,
  });
  const metrics = createEmbedderMetrics();
  const { engine, ready } = loadEngine(config, { onBatch: metrics.observeBatch });
  const prefix = authz.store.connection.keys.prefix;
  // The tests sign their own grants (testGrant): their records are written as authz's Check would.
  const opened = measureSettlement(
    issuingGrants(openSettlementStore({ ...config.redis, timeoutMs: config.settlementTimeoutMs }), prefix),
    metrics,
  );
  const settlement = options.wrapSettlement ? options.wrapSettlement(opened) : opened;
  // As main.ts does, when the settings hold a key-encryption key.
  const batch = config.batch
    ? await startBatchService(config.batch, {
        redis: config.redis,
        parseLine: parseJsonBody,
        execute: batchLineExecutor(engine),
        isReady: () => engine.isReady(),
        onError: (error) => options.onBatchError?.(error),
        wrapStore: (store) => ({
          ...store,
          async open(grant, batch) {
            await issueGrant(prefix, grant);
            return store.open(grant, batch);
          },
        }),
      })
    : undefined;
  const app = buildApp({
    batch,
    config,
    engine,
    metrics,
    settlement,
    ...(options.logStream ? { logStream: options.logStream } : { config: { ...config, logLevel: 'silent' } }),
    ...(options.now ? { now: options.now } : {}),
    ...(options.draining ? { draining: options.draining } : {}),
    // As main.ts does, so every 200 carries x-model-fingerprint.
    modelFingerprint: await modelFingerprint(modelDir),
    modelCreated: await modelInstalledAt(modelDir),
  });
  await ready;
  for (let i = 0; i < 100 && !settlement.isReady(); i += 1) await new Promise((r) => setTimeout(r, 50));
  bindTestGrants(app);
  return {
    app,
    engine,
    authz,
    ...(batch ? { batch } : {}),
    async close() {
      await app.close();
      await batch?.stop();
      settlement.close();
      await engine.close();
      await authz.store.purge();
      await authz.stop();
    },
  };
}

/**
 * Makes app.inject({…}) bind a test grant to the request it travels with (signed again with its
 * method and url), as authz binds every grant to the request it checked: the harness's tests
 * are about what the embedder does with a grant, the binding itself is test/e2e/settlement's.
 */
function bindTestGrants(app: FastifyInstance): void {
  const inject = app.inject.bind(app);
  const bound = (options: Record<string, unknown>): Record<string, unknown> => {
    const headers = options.headers as Record<string, string> | undefined;
    const checked = verifyGrant(headers?.[GRANT_HEADER], [TEST_GRANT_SECRET], Date.now());
    const method = String(options.method ?? 'GET').toUpperCase();
    const path = String(options.url);
    if (!checked.ok || (checked.claims.method === method && checked.claims.path === path)) return options;
    const claims = { ...checked.claims, method, path };
    return { ...options, headers: { ...headers, [GRANT_HEADER]: signGrant(claims, TEST_GRANT_SECRET) } };
  };
  (app as unknown as { inject: unknown }).inject = (options?: unknown) =>
    typeof options === 'object' && options !== null ? inject(bound(options as Record<string, unknown>) as never) : inject(options as never);
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

/** The metrics token of every test embedder (what Prometheus would send). */
export const TEST_METRICS_TOKEN = 'embedder-test-metrics-token-0123456789abcdef';

/** Scrapes the app's GET /metrics, as Prometheus does (with the token). */
export async function scrapeMetrics(app: FastifyInstance): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } });
  if (res.statusCode !== 200) throw new Error(`GET /metrics answered ${res.statusCode}`);
  return res.body;
}
