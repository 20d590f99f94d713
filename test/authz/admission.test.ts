/**
 * authz's admission (edge/admission.ts): at most N Checks held, the rest answered UNAVAILABLE at
 * once; of those held, a few decided at once and the others started in arrival order; a Check
 * whose caller gave up (deadline passed, cancelled) does no work, also after waiting.
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
  const started: string[] = [];
  const handler: Handler = (call, callback) => {
    started.push(call.request);
    waiting.push(() => callback(null, 'decided'));
  };
  return { handler, waiting, started, releaseOne: () => waiting.shift()!() };
}

function call(deadline: number = Number.POSITIVE_INFINITY, cancelled = false, request = '') {
  return { cancelled, request, getDeadline: () => deadline } as unknown as grpc.ServerUnaryCall<string, string>;
}

function ask(handler: Handler, c = call()): Promise<Answer> {
  return new Promise((resolve) => handler(c, (error, value) => resolve({ error, value: value ?? undefined })));
}

describe('admitChecks', () => {
  it('holds at most maxInFlight Checks and refuses the next at once, UNAVAILABLE', async () => {
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

  it('decides a few at once and starts the others in arrival order, skipping those whose deadline passed while they waited', async () => {
    const inner = held();
    const admit = admitChecks(inner.handler, 100, 2);
    const later = Date.now() + 60_000;
    const answers = ['a', 'b', 'c', 'd', 'e'].map((name) => ask(admit, call(name === 'd' ? Date.now() + 50 : later, false, name)));
    expect(inner.started).toEqual(['a', 'b']);
    inner.releaseOne();
    expect(inner.started).toEqual(['a', 'b', 'c']);
    // d's deadline passes while it waits: when its turn comes it is refused without work, and e starts.
    await new Promise((resolve) => setTimeout(resolve, 80));
    inner.releaseOne();
    expect(inner.started).toEqual(['a', 'b', 'c', 'e']);
    inner.releaseOne();
    inner.releaseOne();
    const outcomes = await Promise.all(answers);
    expect(outcomes.map((o) => o.value ?? o.error?.code)).toEqual(['decided', 'decided', 'decided', grpc.status.UNAVAILABLE, 'decided']);
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
