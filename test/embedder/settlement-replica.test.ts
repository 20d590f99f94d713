/**
 * Nothing answered is lost with the primary, and the embedder's Redis user outlives a restart
 * (issue 28), on real redis-server processes of the test's own (a primary and a replica started
 * with --replicaof on free ports):
 * - with SETTLEMENT_MIN_REPLICAS 1 a record the replica holds is answered; with the replica
 *   paused (SIGSTOP) the WAIT comes back short, the record is voided (its stream entry deleted,
 *   the counters, tokens and budget given back) and the request is refused with 503;
 * - the primary restarted empty (no persistence: its ACL user and functions gone), authz puts
 *   the namespace's functions and the embedder's user back on reconnect, and the embedder settles
 *   again without anyone's hand.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import type { GrantClaims } from '../../contract/grant.js';
import { openSettlementStore, type SettlementStore } from '../../embedder/src/settlement/store.js';
import { RequestSettlement } from '../../embedder/src/settlement/settlement.js';
import { ProblemError } from '../../openapi/problems.js';
import { waitFor } from '../support/process.js';

const prefix = `ctg-replica-${randomBytes(4).toString('hex')}:`;
const user = { username: 'ctg-embedder', password: randomBytes(24).toString('hex') };
/** Debian's redis-server, as scripts/stack/with-redis.sh starts it. */
const REDIS_SERVER = 'redis-server';
const servers: ChildProcess[] = [];
let primaryPort = 0;
let replicaPort = 0;
let primary: ChildProcess;
let replica: ChildProcess;
let authz: RedisStore;
let admin: Redis;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startRedis(port: number, ...args: string[]): Promise<ChildProcess> {
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], {
    stdio: 'ignore',
  });
  servers.push(child);
  const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  await waitFor(
    `redis-server on ${port}`,
    async () =>
      (await probe
        .connect()
        .then(() => probe.ping())
        .catch(() => '')) === 'PONG',
    10_000,
  );
  probe.disconnect();
  return child;
}

function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** A grant as authz's Check issues it (the grant record written by ctg_check). */
async function issue(budgetTokens?: number): Promise<GrantClaims> {
  const org = budgetTokens === undefined ? 'replicated' : 'budgeted';
  const now = Date.now();
  const claims = {
    org,
    key: 'REPLICAKEYAA',
    model: 'm1',
    tpm: 100_000,
    uid: randomUUID(),
    exp: now + 60_000,
    method: 'POST',
    path: '/v1/embeddings',
  };
  const outcome = await authz.checkLimits({ ...claims, grantedModel: 'm1' }, 'm1', now, { rpm: 100_000, tpm: 100_000 });
  expect(outcome.allowed).toBe(true);
  return claims;
}

async function embedderStore(minReplicas: number): Promise<SettlementStore> {
  const store = openSettlementStore({
    url: `redis://127.0.0.1:${primaryPort}`,
    username: user.username,
    password: user.password,
    prefix,
    timeoutMs: 1000,
    minReplicas,
    // Long enough for a replica's acknowledgement while the whole suite loads the machine (300 ms
    // was not, once in a full run); the paused replica's case waits this long once.
    waitMs: 1000,
  });
  await waitFor('the embedder store to be ready', async () => store.isReady(), 10_000);
  return store;
}

beforeAll(async () => {
  [primaryPort, replicaPort] = [await freePort(), await freePort()];
  primary = await startRedis(primaryPort);
  replica = await startRedis(replicaPort, '--replicaof', '127.0.0.1', String(primaryPort));
  admin = new Redis({ port: primaryPort });
  admin.on('error', () => undefined);
  await waitFor('the replica to sync', async () => /state=online/.test(await admin.info('replication')), 10_000);
  authz = createStore({ url: `redis://127.0.0.1:${primaryPort}`, prefix, timeoutMs: 1000 }, user);
  await authz.ready();
});

afterAll(async () => {
  replica?.kill('SIGCONT');
  await authz?.close();
  admin?.disconnect();
  for (const child of servers) await stopRedis(child);
});

describe('usage survives the loss of the primary (SETTLEMENT_MIN_REPLICAS 1)', () => {
  it('answers a record the replica holds; with the replica paused, voids the record and answers 503', async () => {
    const store = await embedderStore(1);
    try {
      const keys = authz.settlement.keys()!;
      const settle = (grant: GrantClaims) =>
        new RequestSettlement(store, grant, 'm1', `req-${grant.uid}`, { timeoutMs: 3000, retryAfterSeconds: 1 });

      const kept = settle(await issue());
      expect(await kept.admit(9)).toBe(true);
      await kept.record();
      const replicaClient = new Redis({ port: replicaPort });
      await waitFor('the replica to hold the record', async () => (await replicaClient.xlen(keys.usageStream('replicated'))) === 1, 5_000);
      replicaClient.disconnect();

      const day = new Date().toISOString().slice(0, 10);
      const month = day.slice(0, 7);
      const before = {
        daily: await admin.hgetall(keys.usageDaily('replicated', day)),
        month: await admin.get(keys.month('replicated', month)),
      };
      replica.kill('SIGSTOP');
      try {
        const grant = await issue();
        const lost = settle(grant);
        expect(await lost.admit(4)).toBe(true);
        const refused = await lost.record().then(
          () => null,
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(ProblemError);
        expect((refused as ProblemError).code).toBe('authorization_unavailable');
        expect(Number((refused as ProblemError).headers['retry-after'])).toBeGreaterThanOrEqual(1);
        // Voided: the stream holds only the first record, the counters and budget are as before.
        expect(await admin.xlen(keys.usageStream('replicated'))).toBe(1);
        expect(await admin.hget(keys.grant('replicated', grant.uid), 'state')).toBe('v:4');
        expect(await admin.hgetall(keys.usageDaily('replicated', day))).toEqual(before.daily);
        expect(await admin.get(keys.month('replicated', month))).toBe(before.month);
      } finally {
        replica.kill('SIGCONT');
      }
    } finally {
      store.close();
    }
  });
});

describe("the embedder's Redis user survives a Redis restart", () => {
  it('authz re-creates the user and reloads the functions when the primary comes back empty', async () => {
    const store = await embedderStore(0);
    try {
      expect(await admin.call('ACL', 'GETUSER', user.username)).not.toBeNull();
      admin.disconnect();
      await stopRedis(primary);
      primary = await startRedis(primaryPort);
      admin = new Redis({ port: primaryPort });
      admin.on('error', () => undefined);
      // authz reconnects and puts back what the restart lost (store/settlement.ts).
      await waitFor(
        'authz to re-create the embedder user',
        async () => (await admin.call('ACL', 'GETUSER', user.username)) !== null,
        15_000,
      );
      await waitFor('the embedder to settle again', async () => store.isReady(), 15_000);
      const grant = await issue();
      const admitted = await store.admit(grant, 'm1', 3, Date.now());
      expect(admitted.kind).toBe('admitted');
    } finally {
      store.close();
    }
  });
});
