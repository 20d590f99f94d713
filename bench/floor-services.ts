/**
 * The frameworks' floor, for `bench/envoy-ab.ts --b-floor`: authz and the embedder with none of the gateway's
 * own work, only what their fixed frameworks cost for the same traffic. A bench instrument,
 * never a service.
 * - `authz`: @grpc/grpc-js serving Envoy's Authorization/Check from the same protos authz loads,
 *   answering every Check allowed with one fixed response of the real one's shape (the grant,
 *   identity and rate-limit headers, `authorization` removed: authz's own `allowed()` builds it
 *   once); the gRPC health service says SERVING. No caller token check, no key lookup, no Redis,
 *   no signing per Check.
 * - `embedder`: Fastify parsing each POST /v1/embeddings body as JSON and answering it with one
 *   fixed body (a real response, from `body-file`); GET /ready and /health answer 200. No grant,
 *   no tokenizer, no model, no settlement, no metrics, no log lines.
 *   node --import tsx bench/floor-services.ts authz <port>
 *   node --import tsx bench/floor-services.ts embedder <port> <body-file>
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import Fastify from 'fastify';
import { allowed } from '../authz/src/edge/check-response.ts';
import { protos } from '../authz/src/edge/protos.ts';
import { bindServer } from '../authz/src/edge/server.ts';
import { signGrant } from '../contract/grant.ts';

const [role, portArg, bodyFile] = process.argv.slice(2);
const port = Number(portArg);
if (!Number.isInteger(port) || port <= 0) throw new Error('usage: floor-services.ts authz|embedder <port> [body-file]');

async function serveAuthz(): Promise<void> {
  // The real allowed response, built by authz's own check-response.ts from fixed facts, with a
  // grant of the real one's length (the claims authz signs, under a throwaway secret).
  const org = { id: 'bench', endpoints: ['embeddings'], models: ['test-model'], rpm: null, tpm: null, createdAt: 0 };
  const limits = { rpm: 100_000_000, tpm: 1_000_000_000 };
  const grant = signGrant(
    {
      org: org.id,
      key: 'k0123456789abcdef',
      model: 'test-model',
      tpm: limits.tpm,
      uid: '00000000-0000-4000-8000-000000000000',
      exp: Date.now() + 3_600_000,
      method: 'POST',
      path: '/v1/embeddings',
    },
    'floor-secret-floor-secret-floor-secret',
  );
  const response = allowed(
    { kind: 'grant', org, keyId: 'k0123456789abcdef', model: 'test-model', modelEnabled: true },
    {
      allowed: true,
      reason: 'none',
      limits,
      requestsRemaining: limits.rpm - 1,
      requestsResetMs: 600,
      tokensRemaining: limits.tpm,
      retryAfterMs: 0,
    },
    grant,
  );
  const loaded = protos();
  const server = new grpc.Server();
  server.addService(loaded.envoy.service.auth.v3.Authorization.service, {
    Check: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, response),
  });
  server.addService(loaded.grpc.health.v1.Health.service, {
    Check: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, { status: 'SERVING' }),
    Watch: (call: grpc.ServerWritableStream<unknown, unknown>) => call.write({ status: 'SERVING' }),
  });
  await bindServer(server, '127.0.0.1', port);
  process.once('SIGTERM', () => server.forceShutdown());
}

async function serveEmbedder(): Promise<void> {
  if (!bodyFile) throw new Error('the embedder floor needs a body file');
  const body = readFileSync(bodyFile);
  const app = Fastify({ logger: false, bodyLimit: 1_048_576 });
  app.post('/v1/embeddings', async (_request, reply) => reply.header('content-type', 'application/json').send(body));
  app.get('/ready', async () => 'ok');
  app.get('/health', async () => 'ok');
  await app.listen({ host: '127.0.0.1', port });
  process.once('SIGTERM', () => void app.close());
}

if (role === 'authz') await serveAuthz();
else if (role === 'embedder') await serveEmbedder();
else throw new Error(`unknown role ${role}`);
