/**
 * ONNX Runtime's telemetry stays off: an embedder model runner, started the way the embedder
 * starts it (main thread, model in a worker), leaves no `mat-debug-<pid>.log` or `.ses` in the
 * temp directory and no event store under the home directory. It runs in a child process with
 * its own TMPDIR and HOME, because ORT reads its environment once per process.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureTestModel } from '../support/embedder-app.js';

const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'ort-telemetry-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('ONNX Runtime telemetry', () => {
  it('a model runner leaves nothing in TMPDIR or HOME (no mat-debug-<pid>.log, .ses, event store)', async () => {
    const modelDir = ensureTestModel();
    const tmp = join(scratch, 'tmp');
    const home = join(scratch, 'home');
    mkdirSync(tmp);
    mkdirSync(home);
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', TMPDIR: tmp, HOME: home };
    const child = resolve('test/support/model-runner-child.ts');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', child, modelDir], { env });
    expect(JSON.parse(stdout)).toMatchObject({ length: 1024 });
    // tsx keeps its compile cache in TMPDIR (tsx-<uid>); ORT must add nothing beside it.
    expect(readdirSync(tmp).filter((name) => !/^tsx-\d+$/.test(name))).toEqual([]);
    expect(readdirSync(home)).toEqual([]);
  });
});
