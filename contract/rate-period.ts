/**
 * The period every rate limit counts over: an organization's `rpm` and `tpm` (and DEFAULT_RPM /
 * DEFAULT_TPM) are per this window. The settlement functions (contract/redis/settlement.lua) take
 * it as an argument, so authz's Check (authz/src/store/redis.ts, whose GCRA math is
 * authz/src/policy/limits.ts) and the embedder's admit, refund and void
 * (embedder/src/settlement/store.ts) must pass the same one: this.
 */
export const PERIOD_MS = 60_000;
