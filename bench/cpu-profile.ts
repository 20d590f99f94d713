/**
 * A V8 CPU profile (.cpuprofile, as Node's inspector writes it) summed up: how much of the
 * window the thread was busy, and where the busy time went by source file (a package counts as
 * one) and by function, self time only. bench/profile.ts prints it per service.
 */

/** The parts of a .cpuprofile this reads. */
export interface CpuProfile {
  readonly nodes: readonly { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Share {
  readonly name: string;
  /** Of the busy time. */
  readonly share: number;
}

export interface ProfileSummary {
  /** The whole window, µs. */
  readonly totalUs: number;
  /** The time not idle, µs. */
  readonly busyUs: number;
  readonly byFile: readonly Share[];
  readonly byFunction: readonly Share[];
}

// V8's own pseudo-frames for time outside JavaScript functions.
const IDLE = '(idle)';

/** A frame's file: a package under node_modules as the package, else the path below the repository. */
function fileOf(url: string, functionName: string, root: string): string {
  if (url === '') return functionName; // (program), (garbage collector), native functions
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  return url.replace(/^file:\/\//, '').replace(root, '');
}

/** Sums `profile` into the top `top` files and functions; `root` is cut from file paths. */
export function summarizeProfile(profile: CpuProfile, top = 20, root = ''): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const files = new Map<string, number>();
  const functions = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    totalUs += dt;
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === IDLE) {
      idleUs += dt;
      return;
    }
    const file = fileOf(frame.url, frame.functionName, root);
    files.set(file, (files.get(file) ?? 0) + dt);
    const fn = frame.url === '' ? frame.functionName : `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + dt);
  });
  const busyUs = totalUs - idleUs;
  const rank = (m: Map<string, number>): Share[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, share: busyUs > 0 ? us / busyUs : 0 }));
  return { totalUs, busyUs, byFile: rank(files), byFunction: rank(functions) };
}
