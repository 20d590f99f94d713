/**
 * What every CLI command receives, and the parsing of flag values into the core's inputs.
 * Commands only translate flags; the operations (operations/operations.ts) validates and acts.
 */
import type { Who } from '../operations/deps.js';
import { AdminError } from '../operations/errors.js';
import type { Operations } from '../operations/operations.js';

export { AdminError } from '../operations/errors.js';

interface AdminContext {
  readonly ops: Operations;
  /** The CLI's identity in the audit trail: `admin:<name>` (or `bootstrap:<os user>`) from `cli:<os user>@<host>`. */
  readonly who: Who;
  /** True while no administrator exists (cli/identity.ts). */
  readonly bootstrap: boolean;
  /** Where streaming output (exports) goes. */
  readonly write: (text: string) => void;
  /** True with --json: exactly one JSON object is printed. */
  readonly json: boolean;
}

/** Result of a command: one JSON object, or null when the command streamed its own output. */
export type CommandResult = Record<string, unknown> | null;

export type Command = (args: string[], context: AdminContext) => Promise<CommandResult>;

/** A usage error (exit 2) naming the flag. */
export function usageError(message: string): AdminError {
  return new AdminError('invalid', message);
}

/** Parses a non-negative integer flag, or null for '' (meaning "use the default"). */
export function limitOption(name: string, value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === '') return null;
  if (!/^\d{1,10}$/.test(value)) throw usageError(`--${name} must be a non-negative integer`);
  return Number(value);
}

/** A comma-separated list flag; '' is the empty list. */
export function listOption(value: string | undefined): string[] | undefined {
  return value === undefined
    ? undefined
    : value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
}
