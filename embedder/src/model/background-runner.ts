/**
 * The batch lane's own model session, run at the lowest OS priority (issue 27: online first,
 * batch on spare capacity). A model call cannot be interrupted, and on a small machine the
 * lane's inference kept every core busy, so the online path's processes (Envoy, authz, the
 * embedder's event loop and its own model calls) waited for CPU behind it. In a worker thread
 * of its own at nice 19, the lane's inference takes only what the scheduler has left: any online
 * work that becomes runnable preempts it, and with no online work it still gets every core.
 */
import { startModelRunner, type ModelRunner, type RunnerOptions } from './runner.js';

/** The weakest nice value Linux offers an unprivileged thread (weight 15 against 1,024 at 0). */
export const BACKGROUND_NICENESS = 19;

/**
 * Whether a worker thread can be lowered alone. Linux keeps the nice value per thread
 * (setpriority on the calling thread's id) and threads inherit it; elsewhere setpriority(0)
 * would lower the whole process, online path included, so the lane shares the online session.
 */
export function canLowerOneThread(platform: NodeJS.Platform): boolean {
  return platform === 'linux';
}

/** Starts the background session, or returns undefined where a thread cannot be lowered alone. */
export function startBackgroundRunner(
  options: Omit<RunnerOptions, 'niceness'>,
  platform: NodeJS.Platform = process.platform,
): ModelRunner | undefined {
  if (!canLowerOneThread(platform)) return undefined;
  return startModelRunner({ ...options, niceness: BACKGROUND_NICENESS });
}
