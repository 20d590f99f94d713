import { describe, expect, it } from 'vitest';
import { summarizeProfile, type CpuProfile } from '../../bench/cpu-profile.js';

const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });

// Four frames: idle, two functions of one repository file, one of a package, and V8's GC.
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(idle)', '') },
    { id: 2, callFrame: frame('render', 'file:///repo/embedder/src/http/response-body.ts', 9) },
    { id: 3, callFrame: frame('', 'file:///repo/embedder/src/http/response-body.ts', 30) },
    { id: 4, callFrame: frame('sendCommand', 'file:///repo/node_modules/ioredis/built/Redis.js', 336) },
    { id: 5, callFrame: frame('(garbage collector)', '') },
  ],
  samples: [1, 2, 2, 3, 4, 1, 5, 2],
  timeDeltas: [500, 100, 100, 100, 200, 500, 100, 100],
};

describe('summarizeProfile', () => {
  it('counts idle apart and shares the busy time by file and by function, largest first', () => {
    const s = summarizeProfile(profile, 10, '/repo/');
    expect(s.totalUs).toBe(1700);
    expect(s.busyUs).toBe(700);
    expect(s.byFile).toEqual([
      { name: 'embedder/src/http/response-body.ts', share: 400 / 700 },
      { name: 'ioredis', share: 200 / 700 },
      { name: '(garbage collector)', share: 100 / 700 },
    ]);
    expect(s.byFunction[0]).toEqual({ name: 'render embedder/src/http/response-body.ts:10', share: 300 / 700 });
    expect(s.byFunction.map((f) => f.name)).toContain('(anonymous) embedder/src/http/response-body.ts:31');
  });

  it('keeps only the top entries', () => {
    expect(summarizeProfile(profile, 1, '/repo/').byFile).toHaveLength(1);
  });
});
