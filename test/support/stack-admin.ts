/**
 * The authz admin CLI (npm run admin) as the end-to-end tests use it: organizations, keys and
 * usage, against the test stack's own Redis prefix and key-hash secret.
 */
import { randomBytes } from 'node:crypto';
import { waitFor } from './process.js';
import type { Stack } from './stack.js';

export interface CreatedKey {
  readonly id: string;
  readonly key: string;
  readonly org: string;
  readonly expiresAt: string | null;
}

export interface Usage {
  readonly org: string;
  readonly requests: number;
  readonly tokens: number;
}

export interface OrgOptions {
  readonly models?: readonly string[];
  readonly rpm?: number;
  readonly tpm?: number;
  readonly endpoints?: readonly string[];
}

/** A fresh organization name, unique within the run. */
export function orgName(label: string): string {
  return `${label}-${randomBytes(3).toString('hex')}`;
}

/** `org create <org> [--models a,b] [--rpm N] [--tpm N] [--endpoints e1,e2]` */
export function createOrg(stack: Stack, org: string, options: OrgOptions = {}): void {
  const args = ['org', 'create', org];
  if (options.models) args.push('--models', options.models.join(','));
  if (options.rpm !== undefined) args.push('--rpm', String(options.rpm));
  if (options.tpm !== undefined) args.push('--tpm', String(options.tpm));
  if (options.endpoints) args.push('--endpoints', options.endpoints.join(','));
  stack.admin(args);
}

/** `key create --org <org> [--expires-at ISO] --json` */
export function createKey(stack: Stack, org: string, expiresAt?: string): CreatedKey {
  const args = ['key', 'create', '--org', org, '--json'];
  if (expiresAt) args.push('--expires-at', expiresAt);
  return JSON.parse(stack.admin(args)) as CreatedKey;
}

/** An organization with the served model (unless overridden) and one key for it. */
export function orgWithKey(stack: Stack, label: string, options: OrgOptions = {}): CreatedKey {
  const org = orgName(label);
  createOrg(stack, org, { models: [stack.svc.modelId], ...options });
  return createKey(stack, org);
}

/** `key revoke <id>` */
export function revokeKey(stack: Stack, id: string): void {
  stack.admin(['key', 'revoke', id]);
}

/** `usage --org <org> --json` */
export function usage(stack: Stack, org: string): Usage {
  return JSON.parse(stack.admin(['usage', '--org', org, '--json'])) as Usage;
}

/**
 * Waits until the recorded usage of `org` equals `expected` (tokens unchecked when omitted);
 * Envoy flushes its access log to authz in batches.
 */
export async function waitForUsage(stack: Stack, org: string, expected: { requests: number; tokens?: number }): Promise<Usage> {
  let last: Usage | undefined;
  await waitFor(
    `usage of ${org} to reach ${JSON.stringify(expected)}`,
    async () => {
      last = usage(stack, org);
      return last.requests === expected.requests && (expected.tokens === undefined || last.tokens === expected.tokens);
    },
    15_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last seen ${JSON.stringify(last)}`);
  });
  return last!;
}
