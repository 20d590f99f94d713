/**
 * Refusals the admin core raises on purpose. The CLI prints them (exit 2 for bad input, 1 for
 * the rest); the admin API turns each kind into its problem code.
 */
export type AdminErrorKind = 'invalid' | 'not_found' | 'conflict' | 'unauthorized' | 'forbidden';

export class AdminError extends Error {
  constructor(
    readonly kind: AdminErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'AdminError';
  }

  /** The CLI's exit status: 2 for input the operator must fix, 1 otherwise. */
  get exitCode(): 1 | 2 {
    return this.kind === 'invalid' ? 2 : 1;
  }
}

/** Bad input; `field` is named first so a console can point at it. */
export function invalid(field: string, rule: string): AdminError {
  return new AdminError('invalid', `${field}: ${rule}`);
}
