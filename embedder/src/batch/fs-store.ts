/**
 * The directory store: the embedded default for `make up` (BATCH_STORE=dir:.local/batch). Parts
 * and records are files written atomically (a temporary file, fsync, then rename, or link for
 * "only if absent"), so a crash never leaves half a part, and every replica on the host shares
 * it. Organization ids are hex-encoded in paths, so no id can name a path outside the directory.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { FILE_ID, GROUP, type BatchFileStore, type StoredFile } from './file-store.js';

const orgDir = (org: string): string => Buffer.from(org, 'utf8').toString('hex');

function checked(pattern: RegExp, value: string, what: string): string {
  if (!pattern.test(value)) throw new Error(`invalid ${what}`);
  return value;
}

async function writeTemp(dir: string, data: Buffer | string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}

async function readOrNull(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Opens (creating) the directory store at `root`. */
export async function openDirectoryStore(root: string): Promise<BatchFileStore> {
  await mkdir(join(root, 'parts'), { recursive: true, mode: 0o700 });
  await mkdir(join(root, 'files'), { recursive: true, mode: 0o700 });
  const groupPath = (group: string) => join(root, 'parts', checked(GROUP, group, 'group'));
  const filePath = (org: string, id: string) => join(root, 'files', orgDir(org), `${checked(FILE_ID, id, 'file id')}.json`);
  const readRecord = async (path: string): Promise<StoredFile | null> => {
    const raw = await readOrNull(path);
    return raw ? (JSON.parse(raw.toString('utf8')) as StoredFile) : null;
  };

  return {
    async putPart(group, index, sealed) {
      const dir = groupPath(group);
      await rename(await writeTemp(dir, sealed), join(dir, String(index)));
    },
    async putPartIfAbsent(group, index, sealed) {
      const dir = groupPath(group);
      const temp = await writeTemp(dir, sealed);
      try {
        await link(temp, join(dir, String(index)));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw error;
      } finally {
        await unlink(temp);
      }
    },
    getPart: async (group, index) => readOrNull(join(groupPath(group), String(index))),
    async deleteGroup(group) {
      await rm(groupPath(group), { recursive: true, force: true });
    },
    async saveFile(file) {
      const path = filePath(file.org, file.id);
      await rename(await writeTemp(join(path, '..'), JSON.stringify(file)), path);
    },
    getFile: async (org, id) => readRecord(filePath(org, id)),
    async listFiles(org) {
      const dir = join(root, 'files', orgDir(org));
      const names = await readdir(dir).catch(() => [] as string[]);
      const files = await Promise.all(names.filter((n) => n.endsWith('.json')).map((n) => readRecord(join(dir, n))));
      return files.filter((f): f is StoredFile => f !== null).sort((a, b) => b.createdAt - a.createdAt || b.id.localeCompare(a.id));
    },
    async deleteFile(org, id) {
      try {
        await unlink(filePath(org, id));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
    },
    async expiredFiles(now, limit) {
      const expired: StoredFile[] = [];
      for (const org of await readdir(join(root, 'files'))) {
        for (const name of await readdir(join(root, 'files', org)).catch(() => [] as string[])) {
          if (!name.endsWith('.json')) continue;
          const file = await readRecord(join(root, 'files', org, name));
          if (file && file.expiresAt <= now) expired.push(file);
          if (expired.length >= limit) return expired;
        }
      }
      return expired;
    },
    async ping() {
      await stat(root);
    },
    async close() {},
  };
}
