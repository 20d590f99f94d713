/**
 * The bench's load straight at the embedder (bench/grant-load.ts) sends every request with a
 * grant of its own, as the embedder requires (a grant admits one request): against a server that
 * refuses a grant it has seen (503, as the embedder's settlement does), every request of a closed
 * loop and of a fixed rate is a 200. `hey`, with one header for the whole run, got one 200 and
 * the rest 503 from the embedder, so `make bench`'s direct figures measured refusals.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrantPool, runWithGrants } from '../../bench/grant-load.js';

let server: Server;
let url: string;
const seen = new Set<string>();
let issued = 0;
const grant = async () => ({ 'x-test-grant': `g${++issued}` });

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['x-test-grant']);
      const fresh = !seen.has(id);
      seen.add(id);
      res.writeHead(fresh ? 200 : 503, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/embeddings`;
});

afterAll(() => {
  server.close();
});

describe('load with a fresh grant per request', () => {
  it('closed loop: every request is a 200, each on a grant no other request used, past the first fill of the pool', async () => {
    // A pool of 20: the run needs many more, so refills (and a wait for one, if it runs dry) are exercised.
    const r = await runWithGrants({ url, body: '{}', workers: 8, seconds: 0.5, grants: new GrantPool(grant, 20) });
    expect(r.requests).toBeGreaterThan(20);
    expect(r.statuses).toEqual({ 200: r.requests });
    expect(r.ok).toBe(r.requests);
    expect(r.okPerS).toBeGreaterThan(0);
  });

  it('fixed rate: sends rate × seconds requests, each with its own grant', async () => {
    const before = seen.size;
    const grants = new GrantPool(grant, 50);
    await grants.fill();
    const r = await runWithGrants({ url, body: '{}', workers: 4, rate: 200, seconds: 0.5, grants });
    expect(r.requests).toBe(100);
    expect(r.statuses).toEqual({ 200: 100 });
    expect(seen.size - before).toBe(100);
  });
});
