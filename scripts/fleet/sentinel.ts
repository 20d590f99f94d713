/**
 * What the fleet's Sentinels say, asked with redis-cli from the root namespace (asynchronously:
 * the load client shares this process's event loop, and a blocked loop would skew its timings).
 * The Sentinels' password goes in the environment (REDISCLI_AUTH), never on a command line.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Fleet } from './fleet.js';
import { REDIS_HOSTS, SENTINEL_NAME, sentinelPort } from './fleet.js';

// A Sentinel runs beside each Redis node (fleet.ts).
const SENTINEL_HOSTS = REDIS_HOSTS;

const run = promisify(execFile);

/** One Sentinel's answer to a command, as redis-cli prints it (one value a line). */
async function ask(fleet: Fleet, sentinelHost: string, ...args: string[]): Promise<string[]> {
  const { stdout } = await run('redis-cli', ['-h', fleet.host(sentinelHost).address, '-p', String(sentinelPort), ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', REDISCLI_AUTH: fleet.sentinelPassword },
    timeout: 2_000,
  });
  return stdout.split('\n').filter((l) => l !== '');
}

/** A flat redis-cli reply of field/value pairs as an object. */
function pairs(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < lines.length; i += 2) out[lines[i] as string] = lines[i + 1] as string;
  return out;
}

/**
 * Sets every Sentinel's TILT period to 5 s (SENTINEL DEBUG, not kept in the config file), as
 * deploy/'s sentinel.sh does: after a 30 s TILT a Sentinel marks the primary down too late to
 * promote any replica (scripts/fleet/README.md, "TILT").
 */
export async function shortenTilt(fleet: Fleet): Promise<void> {
  for (const s of SENTINEL_HOSTS) {
    const answer = await ask(fleet, s, 'SENTINEL', 'DEBUG', 'tilt-period', '5000');
    if (answer[0] !== 'OK') throw new Error(`${s}'s Sentinel refused SENTINEL DEBUG tilt-period: ${answer.join(' ')}`);
  }
}

/** The primary one Sentinel names now ("address:port"). */
export async function sentinelPrimary(fleet: Fleet, sentinelHost = 'redis-c'): Promise<string> {
  return (await ask(fleet, sentinelHost, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)).join(':');
}

/** The fleet host whose Redis is at "address:port". */
export function redisHostAt(fleet: Fleet, addr: string): string {
  const host = REDIS_HOSTS.find((h) => addr.startsWith(`${fleet.host(h).address}:`));
  if (!host) throw new Error(`no Redis node of the fleet at ${addr}`);
  return host;
}

/**
 * True when every Sentinel names the same primary, knows the other two Sentinels and knows
 * every other Redis node as a replica that is up and linked to that primary — only then can
 * any two of them (the quorum) agree that the primary is down and elect a leader that has a
 * good replica to promote. A Sentinel learns replicas from the primary's INFO (every 10 s) and
 * other Sentinels from their hello messages (every 2 s), so shortly after a start it may not.
 */
export async function sentinelsReady(fleet: Fleet): Promise<boolean> {
  const views = await Promise.all(
    SENTINEL_HOSTS.map(async (s) => ({
      primary: await sentinelPrimary(fleet, s),
      master: pairs(await ask(fleet, s, 'SENTINEL', 'master', SENTINEL_NAME)),
      replicas: groups(await ask(fleet, s, 'SENTINEL', 'replicas', SENTINEL_NAME)),
    })),
  );
  const primary = views[0]?.primary;
  return views.every(
    (v) =>
      v.primary === primary &&
      v.master.flags === 'master' &&
      Number(v.master['num-other-sentinels']) === SENTINEL_HOSTS.length - 1 &&
      REDIS_HOSTS.filter((h) => !primary?.startsWith(`${fleet.host(h).address}:`)).every((h) =>
        v.replicas.some((r) => r.ip === fleet.host(h).address && r.flags === 'slave' && r['master-link-status'] === 'ok'),
      ),
  );
}

/** `SENTINEL replicas` as redis-cli prints it: each replica's field/value pairs, one after another, from "name". */
function groups(lines: readonly string[]): Array<Record<string, string>> {
  const out: string[][] = [];
  for (let i = 0; i + 1 < lines.length; i += 2) {
    if (lines[i] === 'name') out.push([]);
    out[out.length - 1]?.push(lines[i] as string, lines[i + 1] as string);
  }
  return out.map(pairs);
}

/** True once some Sentinel holds the primary objectively down or is failing it over (one command each: polled fast). */
export async function failoverStarted(fleet: Fleet): Promise<boolean> {
  const flags = await Promise.all(
    SENTINEL_HOSTS.map(async (s) => pairs(await ask(fleet, s, 'SENTINEL', 'master', SENTINEL_NAME)).flags ?? ''),
  );
  return flags.some((f) => f.includes('o_down') || f.includes('failover_in_progress'));
}
