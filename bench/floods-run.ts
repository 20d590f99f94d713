/**
 * `npx tsx bench/floods-run.ts [idleConnections]`: the figures of docs/security.md. Runs each flood
 * of bench/floods.ts against a fresh local stack with the production defaults (10,000
 * connections, 60 s idle and whole-request timeouts, 0.5 s authz deadline) on the generated test
 * model, prints a table and writes bench/results/floods.json. About four minutes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { h2StreamFlood, idleConnectionFlood, slowBodyFlood, type FloodResult } from './floods.js';
import { orgWithKey } from '../test/support/stack-admin.js';
import { repoRoot, startStack } from '../test/support/stack.js';

const idleConnections = Number(process.argv[2] ?? 9_000);
const stack = await startStack(join(repoRoot, '.local/models/test'));
const results: FloodResult[] = [];
try {
  const target = {
    port: stack.ports.gateway,
    ca: stack.ca,
    envoyPid: stack.processes.envoy.pid!,
    apiKey: orgWithKey(stack, 'legit').key,
    modelId: stack.svc.modelId,
  };
  const attacker = orgWithKey(stack, 'attacker', { rpm: 1_000_000 }).key;
  results.push(await idleConnectionFlood(target, idleConnections, 75));
  results.push(await slowBodyFlood(target, 500, undefined, 10));
  results.push(await slowBodyFlood(target, 200, attacker, 75));
  results.push(await h2StreamFlood(target, 3, 100, undefined, 10));
  results.push(await h2StreamFlood(target, 3, 100, attacker, 75));
} finally {
  await stack.stop();
}
console.log('| flood | attackers | how they ended | released after | Envoy RSS before → peak → after | legitimate: ok/sent, p50, max |');
console.log('|---|---|---|---|---|---|');
for (const r of results) {
  const outcomes = Object.entries(r.outcomes)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
  const m = r.envoyRssMb;
  console.log(
    `| ${r.name} | ${r.attackers} | ${outcomes} | ${r.releasedAfterS ?? '—'} s | ${m.before} → ${m.peak} → ${m.after} MB | ${r.legit.ok}/${r.legit.sent}, ${r.legit.p50Ms} ms, ${r.legit.maxMs} ms |`,
  );
}
mkdirSync(join(repoRoot, 'bench/results'), { recursive: true });
writeFileSync(join(repoRoot, 'bench/results/floods.json'), JSON.stringify({ date: new Date().toISOString(), results }, null, 2));
