/**
 * The bench's own redis-server (the stack module's Redis component: append-only file, fsync
 * every second, as `make up` keeps usage) on a free loopback port. Its CPU time is part of the
 * whole path's cost per request, and the Redis other work on this machine shares would mix that
 * work's commands into the figure; an own server counts only the gateway's.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { redisComponent } from '../scripts/stack/components.ts';
import { freePort, startService, type Service } from './processes.ts';

/** A started bench Redis and its URL. */
export interface BenchRedis {
  service: Service;
  url: string;
}

/** A second server's name (its folder and log), and a primary to replicate or extra settings. */
export interface BenchRedisOptions {
  name?: string;
  /** `HOST PORT` of the primary this server replicates. */
  replicaOf?: string;
  extraArgs?: string[];
}

/** Starts an empty redis-server under .local/bench/<name>; processes.ts stops it with the rest. */
export async function startBenchRedis(options: BenchRedisOptions = {}): Promise<BenchRedis> {
  const name = options.name ?? 'redis';
  const port = await freePort();
  const dir = resolve(`.local/bench/${name}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  mkdirSync(resolve('.local/bench/logs'), { recursive: true });
  const service = await startService(
    redisComponent({
      name,
      bind: '127.0.0.1',
      port,
      dir,
      logFile: resolve(`.local/bench/logs/${name}.log`),
      ...(options.replicaOf ? { replicaOf: options.replicaOf } : {}),
      ...(options.extraArgs ? { extraArgs: options.extraArgs } : {}),
    }),
  );
  return { service, url: `redis://127.0.0.1:${port}` };
}
