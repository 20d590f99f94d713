/**
 * What every admin command receives, and the error type for refusals the operator must see.
 */
import type { AuthzConfig } from '../config.js';
import type { AdminStore } from '../store/admin.js';
import type { UsageReports } from '../store/reports.js';

export interface AdminContext {
  readonly config: AuthzConfig;
  readonly store: AdminStore;
  readonly reports: UsageReports;
  readonly now: () => number;
  /** Where streaming output (usage export) goes. */
  readonly write: (text: string) => void;
}

/** A refusal to show the operator; `usage` errors exit 2, others 1. */
export class AdminError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

/** Result of a command: one JSON object, or null when the command streamed its own output. */
export type CommandResult = Record<string, unknown> | null;

export type Command = (args: string[], context: AdminContext) => Promise<CommandResult>;

/** Parses a non-negative integer option, or null for '' (meaning "use the default"). */
export function limitOption(name: string, value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === '') return null;
  if (!/^\d{1,10}$/.test(value)) throw new AdminError(`--${name} must be a non-negative integer`, 2);
  return Number(value);
}

/** Parses an ISO-8601 date-time option into ms. */
export function timeOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) throw new AdminError(`--${name} must be an ISO-8601 date-time`, 2);
  return ms;
}
