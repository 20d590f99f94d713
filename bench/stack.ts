/**
 * The bench's own gateway: authz, the embedder (generated model) and Envoy on free loopback
 * ports, started by the stack module as `make up` starts them, so a stack already up is left
 * alone. Redis is the one at REDIS_URL, under a random key prefix that is deleted afterwards.
 */
import { issueGrant } from '../test/support/settlement.js';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { promisify } from 'node:util';
import { signGrant } from '../contract/grant.ts';
import { GRANT_HEADER } from '../contract/headers.ts';
import { authzComponent, envoyComponent, type ServiceContract } from '../scripts/stack/components.ts';
import { writeLocalEnvoyConfig } from '../scripts/stack/local-stack.ts';
import { httpsOk, waitFor } from '../scripts/stack/probes.ts';
import { inherited, startEmbedder } from './embedder-service.ts';
import { stripEnvoyConfig } from './envoy-strip.ts';
import { freePort, startService, stopService, type Service } from './processes.ts';

const run = promisify(execFile);

/** A running bench stack. */
export interface BenchStack {
  gatewayUrl: string;
  embedderUrl: string;
  apiKey: string;
  modelId: string;
  services: { embedder: Service; authz: Service; envoy: Service };
  /** Envoy's rendered bootstrap and its admin port (bench/envoy-ab.ts starts a second Envoy from them). */
  envoy: { configFile: string; adminPort: number };
  /** A fresh grant for the bench's key, as authz adds it upstream: each direct request to the embedder sends its own. */
  freshGrant: () => Promise<Record<string, string>>;
  /** The authz process's environment (the capacity bench reuses it). */
  authzEnv: Record<string, string>;
  authzAddress: string;
  stop: () => Promise<void>;
}

/** What the bench stack needs from the machine (made by `make up` / bench/run.sh). */
export interface StackPaths {
  envoyBin: string;
  tlsDir: string;
  redisUrl: string;
  envoyConcurrency?: number;
  authzEntry?: string;
  /** Tuning runs: parts of Envoy's filter chain left out (bench/envoy-strip.ts). */
  envoyStrip?: string[];
  /** A folder under .local/bench for this stack's Envoy config, when two stacks run side by side (bench/wait.ts). */
  name?: string;
}

/** The authz environment for a bench: random Redis prefix and secret, limits far above any bench rate. */
export function benchAuthzEnv(modelId: string, redisUrl: string, port: number): Record<string, string> {
  return {
    AUTHZ_HOST: '127.0.0.1',
    AUTHZ_PORT: String(port),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: `ctg-bench-${randomBytes(4).toString('hex')}:`,
    KEY_HASH_SECRET: randomBytes(24).toString('hex'),
    GRANT_SECRET: randomBytes(24).toString('hex'),
    MODEL_ID: modelId,
    // The bench's Envoy sends the caller token (startBenchStack); the capacity bench sends it too.
    AUTHZ_CALLER_TOKEN: randomBytes(24).toString('hex'),
    METRICS_TOKEN: randomBytes(24).toString('hex'),
    DEFAULT_RPM: '100000000',
    DEFAULT_TPM: '1000000000',
    LOG_LEVEL: 'warn',
  };
}

/** Runs the admin CLI with the authz environment; returns its one JSON object. */
export async function admin(env: Record<string, string>, args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'admin/src/cli/main.ts', ...args, '--json'], {
    env: { ...process.env, ...env },
  });
  return JSON.parse(stdout.trim().split('\n').pop() as string) as Record<string, unknown>;
}

/** Creates an organization with the served model and returns a fresh API key. */
export async function createApiKey(env: Record<string, string>): Promise<string> {
  await admin(env, ['org', 'create', 'bench', '--rpm', '100000000', '--tpm', '1000000000']);
  const key = await admin(env, ['key', 'create', '--org', 'bench', '--name', 'bench']);
  if (typeof key.key !== 'string') throw new Error(`admin key create gave no key: ${JSON.stringify(key)}`);
  return key.key;
}

/** Deletes every Redis key under the bench prefix (SCAN, never FLUSH*). */
export async function deletePrefix(redisUrl: string, prefix: string): Promise<void> {
  const { stdout } = await run('redis-cli', ['-u', redisUrl, '--scan', '--pattern', `${prefix}*`], { maxBuffer: 64 * 1024 * 1024 });
  const keys = stdout.split('\n').filter(Boolean);
  for (let i = 0; i < keys.length; i += 500) await run('redis-cli', ['-u', redisUrl, 'DEL', ...keys.slice(i, i + 500)]);
}

/** A running bench authz with its organization and key: what the embedder settles with. */
export interface BenchAuthz {
  service: Service;
  env: Record<string, string>;
  address: string;
  apiKey: string;
  /**
   * A grant as authz signs it for the key (its record issued in Redis, valid for an hour): a
   * grant admits one request, so every direct request to the embedder needs its own.
   */
  freshGrant: () => Promise<Record<string, string>>;
  /** What the embedder needs to settle as this authz's peer: grant secret and Redis prefix. */
  embedderEnv: Record<string, string>;
  stop: () => Promise<void>;
}

/** Starts authz under a fresh Redis prefix with the organization `bench` and one key. */
export async function startBenchAuthz(modelId: string, paths: StackPaths): Promise<BenchAuthz> {
  const port = await freePort();
  const env = benchAuthzEnv(modelId, paths.redisUrl, port);
  const svc: ServiceContract = {
    modelDir: '',
    modelId,
    redisUrl: paths.redisUrl,
    keyHashSecretFile: '',
    grantSecretFile: '',
    redisKeyPrefix: env.REDIS_KEY_PREFIX,
  };
  const logDir = resolve('.local/bench/logs');
  mkdirSync(logDir, { recursive: true });
  const service = await startService(
    authzComponent(svc, {
      host: '127.0.0.1',
      port,
      logFile: `${logDir}/authz.log`,
      baseEnv: inherited(),
      overrides: env,
      ...(paths.authzEntry ? { entry: paths.authzEntry } : {}),
    }),
  );
  const stop = async (): Promise<void> => {
    await stopService(service);
    await deletePrefix(paths.redisUrl, env.REDIS_KEY_PREFIX as string);
  };
  try {
    const apiKey = await createApiKey(env);
    const keyId = apiKey.split('_')[1] as string;
    // A grant admits one request (its record is written as authz's Check writes it): a bench
    // that reuses one sees every request after the first refused.
    const freshGrant = async (): Promise<Record<string, string>> => {
      const claims = {
        org: 'bench',
        key: keyId,
        model: modelId,
        tpm: Number(env.DEFAULT_TPM),
        uid: randomUUID(),
        exp: Date.now() + 3_600_000,
        method: 'POST',
        path: '/v1/embeddings',
      };
      await issueGrant(env.REDIS_KEY_PREFIX as string, claims, { url: paths.redisUrl });
      return { [GRANT_HEADER]: signGrant(claims, env.GRANT_SECRET as string) };
    };
    const embedderEnv = {
      GRANT_SECRET: env.GRANT_SECRET as string,
      REDIS_URL: paths.redisUrl,
      REDIS_KEY_PREFIX: env.REDIS_KEY_PREFIX as string,
    };
    return { service, env, address: `127.0.0.1:${port}`, apiKey, freshGrant, embedderEnv, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Starts authz, the embedder and Envoy; every process is stopped by `stop()` (or on exit). */
export async function startBenchStack(
  modelDir: string,
  modelId: string,
  paths: StackPaths,
  embedderEnv: Record<string, string> = {},
): Promise<BenchStack> {
  const [gatewayPort, adminPort] = [await freePort(), await freePort()];
  const authz = await startBenchAuthz(modelId, paths);
  const authzPort = Number(authz.address.split(':')[1]);
  const svc: ServiceContract = {
    modelDir,
    modelId,
    redisUrl: paths.redisUrl,
    keyHashSecretFile: '',
    grantSecretFile: '',
    redisKeyPrefix: authz.env.REDIS_KEY_PREFIX,
  };
  const logDir = resolve('.local/bench/logs');
  const started: Service[] = [];
  const stop = async (): Promise<void> => {
    for (const s of started.reverse()) await stopService(s);
    await authz.stop();
  };
  try {
    const embedder = await startEmbedder(modelDir, modelId, { ...embedderEnv, MODEL_ID: modelId, ...authz.embedderEnv });
    started.push(embedder.service);
    const embedderPort = Number(new URL(embedder.baseUrl).port);
    // Its caller-token SDS file goes next to it (Envoy watches that file): two stacks, two folders.
    const configFile = resolve(`.local/bench/${paths.name ? `${paths.name}/` : ''}envoy.yaml`);
    mkdirSync(dirname(configFile), { recursive: true });
    writeLocalEnvoyConfig({
      svc,
      logDir,
      envoyConfigFile: configFile,
      envoyBinary: paths.envoyBin,
      gateway: { host: '127.0.0.1', port: gatewayPort },
      envoyAdminPort: adminPort,
      authz: { host: '127.0.0.1', port: authzPort },
      embedder: { host: '127.0.0.1', port: embedderPort },
      tls: { certFile: `${paths.tlsDir}/server.pem`, keyFile: `${paths.tlsDir}/server-key.pem` },
      envoy: { authzCallerToken: authz.env.AUTHZ_CALLER_TOKEN },
    });
    if (paths.envoyStrip?.length) stripEnvoyConfig(configFile, paths.envoyStrip);
    // As `make up` starts it: ENVOY_CONCURRENCY's default (localEnvoyWorkers) unless a tuning run asks.
    const envoy = await startService(
      envoyComponent({
        binary: paths.envoyBin,
        configFile,
        adminPort,
        gatewayHost: '127.0.0.1',
        gatewayPort,
        logFile: `${logDir}/envoy.log`,
        ...(paths.envoyConcurrency ? { concurrency: paths.envoyConcurrency } : {}),
      }),
    );
    started.push(envoy);
    const gatewayUrl = `https://127.0.0.1:${gatewayPort}`;
    await waitFor('the gateway /health', httpsOk(`${gatewayUrl}/health`, readFileSync(`${paths.tlsDir}/ca.pem`)), 30_000);
    return {
      gatewayUrl,
      envoy: { configFile, adminPort },
      embedderUrl: embedder.baseUrl,
      apiKey: authz.apiKey,
      modelId,
      freshGrant: authz.freshGrant,
      services: { embedder: embedder.service, authz: authz.service, envoy },
      authzEnv: authz.env,
      authzAddress: authz.address,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
