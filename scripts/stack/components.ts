/** How each service is started, as argv relative to the repository root; images and the stack agree on it. */
export const ENTRYPOINTS: Readonly<Record<'authz' | 'embedder', readonly string[]>> = {
  authz: ['node', '--import', 'tsx', 'authz/src/main.ts'],
  embedder: ['node', '--import', 'tsx', 'embedder/src/main.ts'],
};
