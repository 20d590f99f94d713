/**
 * The batch lane's own session (model/background-runner.ts): its worker thread and the ONNX
 * Runtime threads it creates run at nice 19, the rest of the process does not, and it embeds as
 * the online session does. Real ONNX test model; Linux only by design (elsewhere it is not started).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { API_DIMENSIONS, readManifest } from '../../contract/model-manifest.js';
import { BACKGROUND_NICENESS, canLowerOneThread, startBackgroundRunner } from '../../embedder/src/model/background-runner.js';
import { startModelRunner, type ModelRunner } from '../../embedder/src/model/runner.js';

/** Nice value of each thread of this process (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceness(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      out.set(tid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

const TEST_MODEL_DIR = resolve('.local/models/test');
const manifest = readManifest(TEST_MODEL_DIR);
const options = { modelDir: TEST_MODEL_DIR, threads: 2, manifest, outDimensions: API_DIMENSIONS };
const runners: ModelRunner[] = [];
afterAll(async () => Promise.all(runners.map((r) => r.close())));

describe('the background model session', () => {
  it('is started only where one thread can be lowered alone', () => {
    expect(canLowerOneThread('linux')).toBe(true);
    expect(canLowerOneThread('darwin')).toBe(false);
    expect(startBackgroundRunner(options, 'darwin')).toBeUndefined();
  });

  it('runs its worker and its intra-op threads at nice 19, and only them', async () => {
    expect(process.platform).toBe('linux');
    const before = threadNiceness();
    expect([...before.values()]).not.toContain(BACKGROUND_NICENESS);
    const runner = startBackgroundRunner(options)!;
    runners.push(runner);
    await runner.loaded;
    const lowered = [...threadNiceness()].filter(([tid, nice]) => !before.has(tid) && nice === BACKGROUND_NICENESS);
    // The worker thread and the session's pool (threads - 1 more: the caller runs one share).
    expect(lowered.length).toBeGreaterThanOrEqual(2);
    // The main thread (tid = pid) keeps its priority.
    expect(threadNiceness().get(String(process.pid))).toBe(before.get(String(process.pid)));
  });

  it('embeds exactly as the online session does', async () => {
    const online = startModelRunner(options);
    const background = startBackgroundRunner(options)!;
    runners.push(online, background);
    await Promise.all([online.loaded, background.loaded]);
    const rows = [
      [101, 2000, 3000, 102],
      [101, 4000, 102],
    ];
    const [a, b] = await Promise.all([online.embedRows(rows), background.embedRows(rows)]);
    expect(b.map((v) => Array.from(v))).toEqual(a.map((v) => Array.from(v)));
  });
});
