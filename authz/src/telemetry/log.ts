/**
 * The authz logger: JSON lines on stdout. Log fields are identifiers, codes and counts only;
 * request headers, keys and bodies never reach a log line.
 */
import pino, { type Logger } from 'pino';

/** A logger at `level`, named for the component. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { component: 'authz' } });
}
