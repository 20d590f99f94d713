/**
 * The README's small make targets, typed as a user types them: `make certs`, `make envoy`,
 * `make model`, `make typecheck` and `make logs`; what `make check`, `make test-e2e` and
 * `make test-envoy` run (each a part of this suite, whose lint, type check and files run here
 * anyway). (`make up`, `make down` and `make restart`'s halves run in test/e2e/make-up.test.ts
 * through the same scripts; `make bench` takes ten minutes and never runs inside the suite, by design.)
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/stack.js';

const make = (target: string) => spawnSync('make', ['--no-print-directory', target], { cwd: repoRoot, encoding: 'utf8', timeout: 300_000 });

describe('the README table’s tool targets', () => {
  it('make certs leaves a CA and a server certificate the CA signed', () => {
    const run = make('certs');
    expect(run.status, run.stderr).toBe(0);
    const tls = join(repoRoot, '.local/tls');
    for (const file of ['ca.pem', 'server.pem', 'server-key.pem']) expect(existsSync(join(tls, file)), file).toBe(true);
    const verify = spawnSync('openssl', ['verify', '-CAfile', join(tls, 'ca.pem'), join(tls, 'server.pem')], { encoding: 'utf8' });
    expect(verify.stdout).toContain(': OK');
  });

  it('make envoy prints the path of an Envoy 1.40 binary', () => {
    const run = make('envoy');
    expect(run.status, run.stderr).toBe(0);
    const bin = run.stdout.trim().split('\n').at(-1)!;
    expect(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout).toMatch(/\/1\.40\.\d+\//);
  });

  it('make model leaves the default model with its manifest', () => {
    const run = make('model');
    expect(run.status, run.stderr).toBe(0);
    const dir = join(repoRoot, '.local/models/default');
    for (const file of ['model.onnx', 'tokenizer.json', 'manifest.json']) expect(existsSync(join(dir, file)), file).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')).id).toMatch(/\S/);
  });

  it('make typecheck passes on the tree', () => {
    const run = make('typecheck');
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
  }, 300_000);

  it('make check runs the lint, the type check and the unit tier; make test-e2e and make test-envoy their folders', () => {
    const dryRun = (target: string) => spawnSync('make', ['--no-print-directory', '-n', target], { cwd: repoRoot, encoding: 'utf8' });
    const check = dryRun('check');
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toContain(
      'npm run -s lint && npx tsc --noEmit --incremental --tsBuildInfoFile .local/check.tsbuildinfo && npx vitest run --config vitest.unit.config.ts',
    );
    expect(dryRun('test-e2e').stdout).toMatch(/with-redis\.sh npx vitest run test\/e2e$/m);
    expect(dryRun('test-envoy').stdout).toMatch(/with-redis\.sh npx vitest run test\/envoy test\/e2e$/m);
  });

  it('make logs follows what is written to .local/logs', async () => {
    const logs = join(repoRoot, '.local/logs');
    mkdirSync(logs, { recursive: true });
    const file = join(logs, `make-logs-test-${process.pid}.log`);
    appendFileSync(file, 'first line\n');
    const child = spawn('make', ['--no-print-directory', 'logs'], { cwd: repoRoot, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      appendFileSync(file, 'a later line\n');
      for (let i = 0; i < 50 && !output.includes('a later line'); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(output).toContain('first line');
      expect(output).toContain('a later line');
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      rmSync(file, { force: true });
    }
  });
});
