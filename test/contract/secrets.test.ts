/**
 * Rotatable secrets (contract/secrets.ts): one value per line, the first in use, every one
 * accepted; a file's new content taken on the next poll, a bad one refused with the values held
 * kept. Real files; the watcher is polled by hand (no timing).
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bearerCheck } from '../../contract/bearer.js';
import { EnvReader } from '../../contract/env.js';
import { MAX_SECRET_VALUES, readSecretValues, readTokenValues, watchSecrets, type SecretReload } from '../../contract/secrets.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

describe('reading a rotatable secret', () => {
  it('takes one value per line, the first in use, blank lines and surrounding spaces ignored', () => {
    const read = new EnvReader({ GRANT_SECRET_FILE: file('grant', `\n${A}\n  ${B}  \r\n\n`) });
    const secret = readSecretValues(read, 'GRANT_SECRET', dir);
    expect(read.problems).toEqual([]);
    expect(secret.current).toBe(A);
    expect(secret.accepted).toEqual([A, B]);
    expect(secret.file).toBe(join(dir, 'grant'));
  });

  it('a value set directly is one (or more) values and is not watched', () => {
    const read = new EnvReader({ METRICS_TOKEN: `${A}\n${B}` });
    const token = readTokenValues(read, 'METRICS_TOKEN', dir);
    expect(read.problems).toEqual([]);
    expect(token?.accepted).toEqual([A, B]);
    expect(token?.file).toBeUndefined();
  });

  it('notes a short value on any line, spaces in a token, too many values, a repeated value, an empty file', () => {
    // A token (METRICS_TOKEN) travels as a header; a secret (GRANT_SECRET) only keys an HMAC.
    const problem = (label: string, text: string, token = true) => {
      const name = token ? 'METRICS_TOKEN' : 'GRANT_SECRET';
      const read = new EnvReader({ [`${name}_FILE`]: file(label, text) });
      if (token) readTokenValues(read, name, dir);
      else readSecretValues(read, name, dir);
      return read.problems;
    };
    const T = 'METRICS_TOKEN / METRICS_TOKEN_FILE';
    expect(problem('T1', `${A}\nshort`)).toEqual([expect.stringMatching(new RegExp(`^${T}: must hold a token of at least 32`))]);
    expect(problem('S1', `${A}\nshort`, false)).toEqual([
      expect.stringMatching(/^GRANT_SECRET_FILE \(.*S1\): must hold a secret of at least 32 characters/),
    ]);
    expect(problem('T2', `${A}\n${'x'.repeat(20)} ${'y'.repeat(20)}`)).toEqual([
      expect.stringMatching(new RegExp(`^${T}: .*without spaces`)),
    ]);
    expect(problem('S2', `${A}\n${'x'.repeat(20)} ${'y'.repeat(20)}`, false)).toEqual([]);
    const many = Array.from({ length: MAX_SECRET_VALUES + 1 }, (_, i) => `${i}`.padEnd(40, 'z')).join('\n');
    expect(problem('T3', many)).toEqual([expect.stringMatching(new RegExp(`^${T}: .*at most 4 values`))]);
    expect(problem('T4', `${A}\n${A}`)).toEqual([expect.stringMatching(new RegExp(`^${T}: .*each value once`))]);
    expect(problem('T5', '\n\n', false)).toEqual([expect.stringMatching(/^GRANT_SECRET_FILE \(.*T5\): .*hold a value/)]);
  });

  it('an absent file: a problem for the grant secret, undefined for an unnamed token, a problem for a named one', () => {
    const read = new EnvReader({ GRANT_SECRET_FILE: join(dir, 'absent'), METRICS_TOKEN_FILE: join(dir, 'absent') });
    readSecretValues(read, 'GRANT_SECRET', dir);
    // Unnamed: its declared default file, which does not exist under `dir`.
    expect(readTokenValues(read, 'AUTHZ_CALLER_TOKEN', dir)).toBeUndefined();
    expect(readTokenValues(read, 'METRICS_TOKEN', dir)).toBeUndefined();
    expect(read.problems).toEqual([
      expect.stringMatching(/^GRANT_SECRET \/ GRANT_SECRET_FILE/),
      expect.stringMatching(/^METRICS_TOKEN_FILE/),
    ]);
  });
});

describe('rotating through the file (the three steps of deploy/README.md)', () => {
  it('takes each step on the next poll; the metrics check follows; a bad file is refused and the values held stay', async () => {
    const path = file('metrics', `${A}\n`);
    const token = readTokenValues(new EnvReader({ METRICS_TOKEN_FILE: path }), 'METRICS_TOKEN', dir)!;
    const reports: SecretReload[] = [];
    const watcher = watchSecrets([token, undefined], (r) => reports.push(r), 3_600_000);
    const allowed = bearerCheck(token);
    try {
      await watcher.poll();
      expect(reports).toEqual([]);
      // Step 1: the new value added as accepted; the old one still in use.
      writeFileSync(path, `${A}\n${B}\n`);
      await watcher.poll();
      expect([token.current, allowed(`Bearer ${A}`), allowed(`Bearer ${B}`)]).toEqual([A, true, true]);
      // Step 2: the new one in use, the old one still accepted (Kubernetes swaps the file by a rename).
      writeFileSync(join(dir, 'metrics.next'), `${B}\n${A}\n`);
      renameSync(join(dir, 'metrics.next'), path);
      await watcher.poll();
      expect([token.current, allowed(`Bearer ${A}`), allowed(`Bearer ${B}`)]).toEqual([B, true, true]);
      // A bad edit (a short line) is refused, once; nothing changes.
      writeFileSync(path, `${B}\nshort\n`);
      await watcher.poll();
      await watcher.poll();
      expect(token.accepted).toEqual([B, A]);
      // A vanished file too.
      rmSync(path);
      await watcher.poll();
      expect(token.accepted).toEqual([B, A]);
      // Step 3: the old one dropped: refused from now on; a value never issued never passed.
      writeFileSync(path, `${B}\n`);
      await watcher.poll();
      expect([token.accepted, allowed(`Bearer ${A}`), allowed(`Bearer ${B}`), allowed(`Bearer ${C}`)]).toEqual([[B], false, true, false]);
      expect(reports).toEqual([
        { event: 'secret_reloaded', name: 'METRICS_TOKEN', values: 2 },
        { event: 'secret_reloaded', name: 'METRICS_TOKEN', values: 2 },
        { event: 'secret_refused', name: 'METRICS_TOKEN', problem: expect.stringMatching(/at least 32 printable characters/) },
        { event: 'secret_refused', name: 'METRICS_TOKEN', problem: expect.stringMatching(/cannot read .*ENOENT/) },
        { event: 'secret_reloaded', name: 'METRICS_TOKEN', values: 1 },
      ]);
      // Reports name the setting and count values; never a value.
      expect(JSON.stringify(reports)).not.toMatch(/aaaa|bbbb/);
    } finally {
      watcher.stop();
    }
  });

  it('without a token nobody passes the metrics check (fail closed)', () => {
    expect(bearerCheck(undefined)(`Bearer ${A}`)).toBe(false);
  });
});
