/**
 * authz's admission (edge/admission.ts): at most N Checks at once, the rest answered
 * UNAVAILABLE at once; a Check whose caller gave up (deadline passed, cancelled) does no work.
 * The handler is a stand-in that holds each call until the test releases it, so "in flight" is
 * exact; calls are plain objects with the two fields admission reads.
 */
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { admitChecks } from '../../authz/src/edge/admission.js';

type Answer = { error: Partial<grpc.StatusObject> | null; value?: string };
type Handler = grpc.handleUnaryCall<string, string>;

function held() {
  const waiting: Array<() => void> = [];
  const handler: Handler = (_call, callback) => waiting.push(() => callback(null, 'decided'));
  return { handler, waiting, releaseOne: () => waiting.shift()!() };
}

function call(deadline: number = Number.POSITIVE_INFINITY, cancelled = false) {
  return { cancelled, getDeadline: () => deadline } as unknown as grpc.ServerUnaryCall<string, string>;
}

function ask(handler: Handler, c = call()): Promise<Answer> {
  return new Promise((resolve) => handler(c, (error, value) => resolve({ error, value: value ?? undefined })));
}

describe('admitChecks', () => {
  it('decides at most maxInFlight Checks at once and refuses the next at once, UNAVAILABLE', async () => {
    const inner = held();
    const admit = admitChecks(inner.handler, 2);
    const first = ask(admit);
    const second = ask(admit);
    const refused = await ask(admit);
    expect(refused.error).toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'authorization overloaded' });
    expect(inner.waiting).toHaveLength(2);
    inner.releaseOne();
    expect(await first).toEqual({ error: null, value: 'decided' });
    // A slot freed is a slot taken again.
    const third = ask(admit);
    expect(inner.waiting).toHaveLength(2);
    inner.releaseOne();
    inner.releaseOne();
    expect(await second).toEqual({ error: null, value: 'decided' });
    expect(await third).toEqual({ error: null, value: 'decided' });
  });

  it('does no work for a Check whose deadline passed or whose caller cancelled it', async () => {
    const inner = held();
    const admit = admitChecks(inner.handler, 10);
    expect((await ask(admit, call(Date.now() - 1))).error).toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect((await ask(admit, call(undefined, true))).error).toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(inner.waiting).toHaveLength(0);
    const inTime = ask(admit, call(Date.now() + 60_000));
    expect(inner.waiting).toHaveLength(1);
    inner.releaseOne();
    expect(await inTime).toEqual({ error: null, value: 'decided' });
  });
});
