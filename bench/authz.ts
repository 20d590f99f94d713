/**
 * Part 3 driver. The headline reuses the authz engineer's bench/authz-check.ts (its own authz
 * process on a free port, Redis under its own prefix, one gRPC channel with N calls in flight).
 * Then bench/authz-capacity.ts drives the bench stack's authz while the CPU time of authz and
 * of the client is read from /proc: on 2 shared cores the Node gRPC client costs more per call
 * than authz does, so checks/s says more about the client than the CPU per Check does.
 * When authz-check.ts fails (or a patched authz is measured) the stack figures are the headline.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { runScriptJson } from './child-json.ts';
import type { BenchStack } from './stack.ts';

const run = promisify(execFile);

/** The capacity figures and which script produced them. */
export interface AuthzResult {
  checksPerS: number;
  p50Ms: number;
  p99Ms: number;
  inflight: number;
  source: string;
  /** authz's own CPU per allowed Check, and the rate one core would allow at that cost. */
  authzCpuMsPerCheck: number;
  clientCpuMsPerCheck: number;
  checksPerCoreS: number;
  stackChecksPerS: number;
  note?: string;
}

interface AuthzCheckJson {
  checksPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  concurrency: number;
}
interface CapacityJson {
  checksPerS: number;
  calls: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  authzCpuMs: number;
  clientCpuMs: number;
}

async function authzCheckScript(seconds: number, inflight: number, expectedPerS: number): Promise<AuthzCheckJson> {
  const total = Math.max(2000, Math.round(seconds * expectedPerS));
  await run(process.execPath, ['--import', 'tsx', 'bench/authz-check.ts', String(total), String(inflight)], { timeout: 180_000 });
  return JSON.parse(readFileSync('bench/results/authz-check.json', 'utf8')) as AuthzCheckJson;
}

/** The stack's authz under bench/authz-capacity.ts, which also reads both processes' CPU time. */
async function stackCapacity(stack: BenchStack, seconds: number, inflight: number): Promise<CapacityJson> {
  const r = await runScriptJson<CapacityJson>('bench/authz-capacity.ts', [
    '--address',
    stack.authzAddress,
    '--key',
    stack.apiKey,
    '--model',
    stack.modelId,
    '--seconds',
    String(seconds),
    '--inflight',
    String(inflight),
    '--authz-pid',
    String(stack.services.authz.pid),
    '--caller-token',
    stack.authzEnv.AUTHZ_CALLER_TOKEN as string,
  ]);
  if (r.failed > 0) throw new Error(`authz capacity: ${r.failed} Check calls failed`);
  return r;
}

/** Measures Check capacity with `inflight` concurrent calls for about `seconds` (`ownClient`: skip authz-check.ts). */
export async function measureAuthz(stack: BenchStack, seconds: number, inflight: number, ownClient = false): Promise<AuthzResult> {
  const s = await stackCapacity(stack, seconds, inflight);
  const authzCpuMsPerCheck = s.authzCpuMs / s.calls;
  const own = {
    authzCpuMsPerCheck,
    clientCpuMsPerCheck: s.clientCpuMs / s.calls,
    checksPerCoreS: 1000 / authzCpuMsPerCheck,
    stackChecksPerS: s.checksPerS,
  };
  const fallback = { checksPerS: s.checksPerS, p50Ms: s.p50Ms, p99Ms: s.p99Ms, inflight, source: 'bench/authz-capacity.ts', ...own };
  if (ownClient) return { ...fallback, note: 'patched authz: measured in the bench stack' };
  try {
    const r = await authzCheckScript(seconds, inflight, Math.max(1000, s.checksPerS));
    return {
      checksPerS: r.checksPerSecond,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      inflight: r.concurrency,
      source: 'bench/authz-check.ts',
      ...own,
    };
  } catch (err) {
    const reason = ((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n')[0] ?? 'failed';
    return { ...fallback, note: `bench/authz-check.ts failed (${reason})` };
  }
}
