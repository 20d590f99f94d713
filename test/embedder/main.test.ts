/** The embedder started as the README says (`npm run embedder` = tsx embedder/src/main.ts), over real HTTP. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { issuedTestGrant, TEST_MODEL_ID, ensureTestModel, startTestAuthz } from '../support/embedder-app.js';
import type { RunningAuthz } from '../support/grpc-authz.js';
import { TEST_REDIS_URL } from '../support/redis-store.js';
import { TEST_GRANT_SECRET } from '../support/settlement.js';

function startEmbedder(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'embedder/src/main.ts'], {
    env: { ...process.env, EMBEDDER_HOST: '127.0.0.1', EMBEDDER_PORT: '0', GRANT_SECRET: TEST_GRANT_SECRET, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

describe('embedder process', () => {
  let proc: ReturnType<typeof startEmbedder>;
  let authz: RunningAuthz;
  let base = '';
  beforeAll(async () => {
    authz = await startTestAuthz();
    proc = startEmbedder({
      MODEL_DIR: ensureTestModel(),
      LOG_LEVEL: 'info',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: authz.store.connection.keys.prefix,
    });
    await vi.waitFor(
      () => {
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(proc.output());
        if (!match) throw new Error('not listening yet');
        base = match[1]!;
      },
      { timeout: 60_000, interval: 100 },
    );
  });
  afterAll(async () => {
    if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
    await authz.store.purge();
    await authz.stop();
  });

  it('serves /health, becomes ready, embeds over HTTP, and stops cleanly on SIGTERM', async () => {
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    await vi.waitFor(async () => expect((await fetch(`${base}/ready`)).status).toBe(200), { timeout: 60_000, interval: 100 });
    const res = await fetch(`${base}/v1/embeddings`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'proc-1',
        ...(await issuedTestGrant(authz.store.connection.keys.prefix)),
      },
      body: JSON.stringify({ model: TEST_MODEL_ID, input: ['heart attack', 'fractured femur'] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('proc-1');
    expect(res.headers.get('x-usage-total-tokens')).toBe(String((await res.clone().json()).usage.total_tokens));
    expect((await res.json()).data).toHaveLength(2);

    proc.child.kill('SIGTERM');
    const [code] = await once(proc.child, 'exit');
    expect(code).toBe(0);
    expect(proc.output()).toContain('shutting down');
  });

  it('with EMBEDDER_DRAIN_NOTICE_MS, answers /ready 503 but still embeds during the notice, then stops', async () => {
    const noticed = startEmbedder({
      MODEL_DIR: ensureTestModel(),
      LOG_LEVEL: 'info',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: authz.store.connection.keys.prefix,
      EMBEDDER_DRAIN_NOTICE_MS: '3000',
    });
    try {
      let at = '';
      await vi.waitFor(
        () => {
          const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(noticed.output());
          if (!match) throw new Error('not listening yet');
          at = match[1]!;
        },
        { timeout: 60_000, interval: 100 },
      );
      await vi.waitFor(async () => expect((await fetch(`${at}/ready`)).status).toBe(200), { timeout: 60_000, interval: 100 });
      const exited = once(noticed.child, 'exit');
      noticed.child.kill('SIGTERM');
      await vi.waitFor(async () => expect((await fetch(`${at}/ready`)).status).toBe(503), { timeout: 2_000, interval: 50 });
      const res = await fetch(`${at}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(await issuedTestGrant(authz.store.connection.keys.prefix)) },
        body: JSON.stringify({ model: TEST_MODEL_ID, input: 'served while out of rotation' }),
      });
      expect(res.status).toBe(200);
      expect(noticed.child.exitCode).toBeNull();
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      if (noticed.child.exitCode === null) noticed.child.kill('SIGKILL');
    }
  });

  it('refuses to start on bad settings, naming each bad variable', async () => {
    const bad = startEmbedder({ EMBEDDER_PORT: 'eighty', BATCH_MAX_SIZE: '0' });
    const [code] = await once(bad.child, 'exit');
    expect(code).toBe(1);
    expect(bad.output()).toContain('EMBEDDER_PORT');
    expect(bad.output()).toContain('BATCH_MAX_SIZE');
  });

  it('refuses to start without a model directory', async () => {
    const missing = startEmbedder({ MODEL_DIR: '/nonexistent/model' });
    const [code] = await once(missing.child, 'exit');
    expect(code).toBe(1);
    expect(missing.output()).toContain('/nonexistent/model/manifest.json');
  });
});
