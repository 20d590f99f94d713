import { describe, expect, it } from 'vitest';
import { protos } from '../../authz/src/protos.js';
import { readUsage } from '../../authz/src/policy/usage.js';
import type { HTTPAccessLogEntry, HTTPAccessLogEntry__Output } from '../../authz/generated/envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
import { alsEntry } from '../support/grpc-authz.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const complete = { org: 'acme', keyId: 'ABCDEFGHIJKL', model: 'm1', tokens: 42, requestId: 'r-1', time: NOW - 500 };

/** Round-trips an entry through the real ALS message codec, as authz receives it. */
function decoded(entry: HTTPAccessLogEntry): HTTPAccessLogEntry__Output {
  const method = (protos().envoy.service.accesslog.v3.AccessLogService as any).service.StreamAccessLogs;
  return method.requestDeserialize(method.requestSerialize({ http_logs: { log_entry: [entry] } })).http_logs.log_entry[0];
}

describe('readUsage', () => {
  it('reads identity, tokens, request id and start time from a 200 of POST /v1/embeddings', () => {
    expect(readUsage(decoded(alsEntry(complete)), NOW)).toEqual({
      kind: 'usage',
      usage: { org: 'acme', keyId: 'ABCDEFGHIJKL', model: 'm1', requestId: 'r-1', tokens: 42, time: NOW - 500 },
    });
  });

  it.each([
    ['a 400', { status: 400 }],
    ['a 429', { status: 429 }],
    ['another path', { path: '/health' }],
  ])('does not bill %s', (_label, overrides) => {
    expect(readUsage(decoded(alsEntry({ ...complete, ...overrides })), NOW)).toEqual({ kind: 'not_billable' });
  });

  it('does not bill intermediate entries of long streams', () => {
    const entry = alsEntry(complete);
    entry.common_properties!.intermediate_log_entry = true;
    expect(readUsage(decoded(entry), NOW)).toEqual({ kind: 'not_billable' });
  });

  it.each([
    ['no org', { org: undefined }],
    ['no key id', { keyId: undefined }],
    ['no model', { model: undefined }],
    ['no tokens', { tokens: undefined }],
    ['non-numeric tokens', { tokens: '12abc' }],
    ['negative tokens', { tokens: '-3' }],
    ['an org with a colon', { org: 'acme:other' }],
  ])('ignores a 200 with %s as incomplete', (_label, overrides) => {
    expect(readUsage(decoded(alsEntry({ ...complete, ...overrides })), NOW)).toEqual({ kind: 'incomplete' });
  });

  it('stands in now for a missing start time', () => {
    const entry = alsEntry(complete);
    delete entry.common_properties;
    expect(readUsage(decoded(entry), NOW)).toMatchObject({ usage: { time: NOW } });
  });
});
