/**
 * `make fleet`'s secret rotation: the grant secret, the caller token and the metrics token
 * rotated one after the other under the fleet's load, by deploy/README.md's three steps (add the
 * new value as accepted; switch to it; drop the old), on the files every authz, embedder and
 * Envoy of the fleet reads. No process restarts: authz and the embedders read their files again
 * every 2 s, and each gateway's Envoy watches its caller-token SDS file. main.ts counts every
 * answer that is not a 200 and every usage record; this checks what the load cannot see: the
 * value each step must refuse is refused, and the metrics scrape never fails.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { AuthorizationClient } from '../../authz/generated/envoy/service/auth/v3/Authorization.js';
import { protos } from '../../authz/src/edge/protos.js';
import { signGrant } from '../../contract/grant.js';
import { AUTHZ_CALLER_METADATA, GRANT_HEADER } from '../../contract/headers.js';
import { firstValue, writeCallerSecret } from '../../envoy/render.js';
import { waitFor } from '../stack/probes.js';
import { AUTHZ, EMBEDDERS, GATEWAYS, adminPort, callerSdsFile, type Fleet } from './fleet.js';

// The services read their secret files every 2 s (contract/secrets.ts); three periods, so a
// process busy with the load's requests has surely taken a step before the next one.
const STEP_WAIT_MS = 6_000;
const EMBEDDER_PORT = 8081;
const AUTHZ_PORT = 9191;
const AUTHZ_METRICS_PORT = 9192;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stderr.write(`fleet: rotation: ${new Date().toISOString()} ${line}\n`);

/** Replaces `file` by a rename, as the kubelet updates a mounted Secret: no reader sees half of it. */
function replace(file: string, values: readonly string[]): void {
  writeFileSync(`${file}.next`, `${values.join('\n')}\n`, { mode: 0o600 });
  renameSync(`${file}.next`, file);
}

/** The three steps on `file`, calling `switched` after step 2 (what must follow the switch). */
async function threeSteps(
  file: string,
  switched: (next: string, old: string) => Promise<void> = async () => undefined,
): Promise<{ old: string; next: string }> {
  const old = firstValue(readFileSync(file, 'utf8'));
  const next = randomBytes(32).toString('hex');
  say(`step 1: ${file} accepts the new value`);
  replace(file, [old, next]);
  await sleep(STEP_WAIT_MS);
  say(`step 2: ${file} switches to the new value`);
  replace(file, [next, old]);
  await switched(next, old);
  await sleep(STEP_WAIT_MS);
  say(`step 3: ${file} drops the old value`);
  replace(file, [next]);
  await sleep(STEP_WAIT_MS);
  return { old, next };
}

/** How often a gateway's Envoy has loaded its caller-token SDS secret. */
function sdsUpdates(fleet: Fleet, gateway: string): number {
  const stats = execFileSync(
    'ip',
    ['netns', 'exec', fleet.host(gateway).netns, 'curl', '-fsS', `http://127.0.0.1:${adminPort}/stats?filter=sds`],
    { encoding: 'utf8' },
  );
  return Number(/sds\.authz-caller-token\.update_success: (\d+)/.exec(stats)?.[1] ?? 0);
}

/** authz_callers_refused_total summed over the authz replicas (their metrics listen on each namespace's loopback). */
function callersRefused(fleet: Fleet): number {
  // The header from a file (mode 600), not the command line the process list shows.
  const header = join(fleet.dir, 'rotation-metrics-header');
  writeFileSync(header, `authorization: Bearer ${firstValue(readFileSync(join(fleet.dir, 'metrics-token'), 'utf8'))}\n`, { mode: 0o600 });
  let total = 0;
  for (const replica of AUTHZ) {
    const text = execFileSync(
      'ip',
      ['netns', 'exec', fleet.host(replica).netns, 'curl', '-fsS', '-H', `@${header}`, `http://127.0.0.1:${AUTHZ_METRICS_PORT}/metrics`],
      { encoding: 'utf8' },
    );
    total += Number(/^authz_callers_refused_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
  }
  return total;
}

/** A Check sent straight to an authz replica with `token` as the caller token: its gRPC status. */
function directCheck(fleet: Fleet, replica: string, token: string): Promise<number> {
  const client = new (protos().envoy.service.auth.v3.Authorization)(
    `${fleet.host(replica).address}:${AUTHZ_PORT}`,
    grpc.credentials.createInsecure(),
  ) as AuthorizationClient;
  const metadata = new grpc.Metadata();
  metadata.set(AUTHZ_CALLER_METADATA, token);
  const request = { attributes: { request: { http: { method: 'POST', path: '/v1/embeddings', headers: {} } } } };
  return new Promise((resolve) => {
    client.Check(request, metadata, { deadline: Date.now() + 10_000 }, (error) => {
      client.close();
      resolve(error ? error.code : grpc.status.OK);
    });
  });
}

async function scrape(fleet: Fleet, embedder: string, token: string): Promise<number> {
  const res = await fetch(`http://${fleet.host(embedder).address}:${EMBEDDER_PORT}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await res.arrayBuffer();
  return res.status;
}

/** A request straight to an embedder with a grant signed by `secret`: its status. */
async function directGrant(fleet: Fleet, secret: string): Promise<number> {
  const grant = signGrant(
    {
      org: 'org-a',
      key: 'ABCDEFGHIJKL',
      model: fleet.modelId,
      tpm: 1_000,
      uid: randomUUID(),
      exp: Date.now() + 60_000,
      method: 'POST',
      path: '/v1/embeddings',
    },
    secret,
  );
  const res = await fetch(`http://${fleet.host('embedder-1').address}:${EMBEDDER_PORT}/v1/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [GRANT_HEADER]: grant },
    body: JSON.stringify({ model: fleet.modelId, input: 'rotation probe' }),
  });
  await res.arrayBuffer();
  return res.status;
}

// When the last run's first step began: what fails from then on is the rotation's doing (the
// load's warm-up before it is not; the fleet's first Checks can time out while it starts).
let firstStepAt: number | undefined;

/**
 * The load's answers, of a scenario that ran `rotateSecrets`, from its first step on: how many,
 * how many not a 200, and how many refused for their grant (a 401 with a real key: the one
 * answer a grant secret rotation out of order gives; a caller token out of order shows in
 * authz_callers_refused_total, which `rotateSecrets` checks).
 */
export function sinceFirstStep(
  outcomes: ReadonlyArray<{ readonly at: number; readonly status: number; readonly bogus: boolean; readonly error?: string }>,
): {
  readonly answered: number;
  readonly failed: number;
  readonly refusedGrants: number;
  readonly failures: Readonly<Record<string, number>>;
} {
  const since = outcomes.filter((o) => !o.bogus && firstStepAt !== undefined && o.at >= firstStepAt);
  const failed = since.filter((o) => o.status !== 200);
  const failures: Record<string, number> = {};
  for (const o of failed) failures[`${o.status} ${o.error ?? ''}`.trim()] = (failures[`${o.status} ${o.error ?? ''}`.trim()] ?? 0) + 1;
  return { answered: since.length, failed: failed.length, refusedGrants: failed.filter((o) => o.status === 401).length, failures };
}

/** Rotates the three secrets under the load; throws naming every check that failed. */
export async function rotateSecrets(fleet: Fleet): Promise<void> {
  firstStepAt = Date.now();
  const problems: string[] = [];
  const expect = (what: string, got: unknown, want: unknown) => {
    if (got !== want) problems.push(`${what}: got ${String(got)}, want ${String(want)}`);
  };

  say('grant secret (authz signs with the first line, the embedders verify every line)');
  const grant = await threeSteps(join(fleet.dir, 'grant-secret'));
  expect('a grant signed with the dropped grant secret', await directGrant(fleet, grant.old), 401);
  expect('a grant signed with a secret never issued', await directGrant(fleet, randomBytes(32).toString('hex')), 401);

  say("caller token (authz accepts every line; each Envoy sends its SDS file's)");
  const refusedBefore = callersRefused(fleet);
  const caller = await threeSteps(join(fleet.dir, 'authz-caller-token'), async (next) => {
    const before = GATEWAYS.map((g) => sdsUpdates(fleet, g));
    for (const gateway of GATEWAYS) writeCallerSecret(callerSdsFile(fleet.dir, gateway), next);
    await waitFor(
      'every Envoy to load the new caller token',
      async () => GATEWAYS.every((g, i) => sdsUpdates(fleet, g) > (before[i] as number)),
      30_000,
    );
  });
  // Not one of the gateways' Checks was refused for its token during the whole rotation (what a
  // 503 cannot tell apart from a Check that timed out on a busy machine).
  expect("Checks authz refused for their caller token (Envoy's)", callersRefused(fleet) - refusedBefore, 0);
  for (const replica of AUTHZ) {
    expect(`${replica}: a Check with the dropped caller token`, await directCheck(fleet, replica, caller.old), grpc.status.UNAUTHENTICATED);
    expect(
      `${replica}: a Check with a token never issued`,
      await directCheck(fleet, replica, randomBytes(32).toString('hex')),
      grpc.status.UNAUTHENTICATED,
    );
  }

  say('metrics token (every service accepts every line; the scraper sends one)');
  const metricsFile = join(fleet.dir, 'metrics-token');
  const scrapeAll = async (token: string) => (await Promise.all(EMBEDDERS.map((e) => scrape(fleet, e, token)))).join(',');
  const all = (status: number) => EMBEDDERS.map(() => status).join(',');
  // The scraper sends the old token until step 2, the new one from then on: every scrape answered.
  const metrics = await threeSteps(metricsFile, async (next, old) => {
    await sleep(STEP_WAIT_MS);
    expect('scrapes with the old metrics token while both are accepted', await scrapeAll(old), all(200));
    expect('scrapes with the new metrics token while both are accepted', await scrapeAll(next), all(200));
  });
  expect('scrapes with the new metrics token', await scrapeAll(metrics.next), all(200));
  expect('scrapes with the dropped metrics token', await scrapeAll(metrics.old), all(401));

  if (problems.length > 0) throw new Error(`secret rotation: ${problems.join('; ')}`);
  say('every dropped value refused, every current one accepted');
}
