/**
 * authz's start-up check of its Redis: a Redis that neither appends nor snapshots gets a clear
 * warning; one with an append-only file (as make up runs) or snapshots does not. Asked of real
 * redis-servers started with each setting.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { persistenceWarning, readPersistence } from '../../authz/src/store/persistence.js';
import { redisComponent } from '../../scripts/stack/components.js';
import { Supervisor } from '../../scripts/stack/supervisor.js';
import { freePort } from '../support/process.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-persistence-'));
const started: Supervisor[] = [];
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function redisWith(name: string, extraArgs: string[]): Promise<string> {
  const port = await freePort();
  const spec = redisComponent({ name, bind: '127.0.0.1', port, dir, logFile: join(dir, `${name}.log`), extraArgs });
  const sup = new Supervisor(spec);
  started.push(sup);
  await sup.start();
  return `redis://127.0.0.1:${port}`;
}

describe('Redis persistence check', () => {
  it('warns, naming what is lost, only when nothing persists', () => {
    expect(persistenceWarning({ appendonly: 'no', save: '' })).toMatch(
      /keeps nothing on disk.*loses every organization, key and usage record/,
    );
    expect(persistenceWarning({ appendonly: 'yes', save: '' })).toBeNull();
    expect(persistenceWarning({ appendonly: 'no', save: '3600 1' })).toBeNull();
  });

  it('reads the settings of a real Redis: append-only (make up) passes, an in-memory one is warned about', async () => {
    const persistent = await redisWith('aof', ['--appendfilename', 'aof-test.aof']);
    expect(await readPersistence({ url: persistent }, 1000)).toEqual({ appendonly: 'yes', save: '' });
    // Later arguments win: this one keeps nothing, like the machine-image Redis.
    const volatile = await redisWith('volatile', ['--appendonly', 'no']);
    const settings = await readPersistence({ url: volatile }, 1000);
    expect(settings).toEqual({ appendonly: 'no', save: '' });
    expect(persistenceWarning(settings!)).not.toBeNull();
  }, 30_000);

  it('says nothing (null) when Redis cannot be asked', async () => {
    expect(await readPersistence({ url: `redis://127.0.0.1:${await freePort()}` }, 200)).toBeNull();
  });
});
