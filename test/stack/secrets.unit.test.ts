/**
 * The stack's shared secrets: created once with mode 600 and never overwritten, placed in the
 * stack's state directory by default, and handed to authz as file variables.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { authzEnv } from '../../scripts/stack/components.js';
import { ensureSecretFile } from '../../scripts/stack/secrets.js';
import { upSettings } from '../../scripts/stack/settings.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('stack secrets', () => {
  it('creates 32 random bytes as hex, readable by the owner only, and never overwrites', () => {
    const file = join(dir, 'nested/token');
    ensureSecretFile(file);
    const first = readFileSync(file, 'utf8').trim();
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    ensureSecretFile(file);
    expect(readFileSync(file, 'utf8').trim()).toBe(first);
    writeFileSync(file, 'chosen-by-the-operator-0123456789abcdef');
    ensureSecretFile(file);
    expect(readFileSync(file, 'utf8')).toBe('chosen-by-the-operator-0123456789abcdef');
  });

  it('make up keeps the caller and metrics tokens in its state directory and gives authz their files', () => {
    const settings = upSettings({ STACK_DIR: dir, MODEL_ID: 'm1' });
    expect(settings.svc.authzCallerTokenFile).toBe(join(dir, 'authz-caller-token'));
    expect(settings.svc.metricsTokenFile).toBe(join(dir, 'metrics-token'));
    expect(authzEnv(settings.svc, '127.0.0.1', 9191)).toMatchObject({
      AUTHZ_CALLER_TOKEN_FILE: join(dir, 'authz-caller-token'),
      METRICS_TOKEN_FILE: join(dir, 'metrics-token'),
    });
    const moved = upSettings({
      STACK_DIR: dir,
      MODEL_ID: 'm1',
      AUTHZ_CALLER_TOKEN_FILE: join(dir, 'a'),
      METRICS_TOKEN_FILE: join(dir, 'b'),
    });
    expect([moved.svc.authzCallerTokenFile, moved.svc.metricsTokenFile]).toEqual([join(dir, 'a'), join(dir, 'b')]);
  });
});
