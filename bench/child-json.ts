/** Runs a bench script in its own process (so sessions and thread pools never share one) and parses its JSON line. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `node --import tsx <script> ...args` (in `cwd`, default this one); resolves the last stdout line parsed as JSON. */
export async function runScriptJson<T>(script: string, args: string[], timeoutMs = 300_000, cwd?: string): Promise<T> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', script, ...args], {
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
    killSignal: 'SIGKILL',
    ...(cwd ? { cwd } : {}),
  });
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] as string) as T;
}
