/**
 * A Redis that cannot be reached mid-request (a failover: Sentinel closes the clients of a
 * demoted primary) on a path with no answer of its own for it — the Batch API's reads — fails
 * closed with the 503 problem and retry-after, not a 500: the fleet's split-brain scenario
 * (scripts/fleet) polls a batch through it and must be told to retry.
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { handleError } from '../../embedder/src/http/errors.js';
import { SettlementUnavailableError } from '../../embedder/src/settlement/store.js';

describe('the settlement store unreachable', () => {
  it('answers 503 authorization_unavailable with retry-after', async () => {
    const app = Fastify({ logger: false });
    app.setErrorHandler(handleError);
    app.get('/v1/batches/:id', async () => {
      throw new SettlementUnavailableError(new Error('Connection is closed.'));
    });
    const res = await app.inject({ method: 'GET', url: '/v1/batches/batch_1' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json() as { code: string; detail: string };
    expect(body.code).toBe('authorization_unavailable');
    // Nothing of the Redis error reaches the client.
    expect(body.detail).not.toContain('Connection');
    await app.close();
  });
});
