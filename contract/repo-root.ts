/**
 * The repository root (in an image, the folder the services were copied or compiled into), with
 * no trailing slash: where the default `.local/…` files, the protos and the model live. One module
 * computes it, from its own place one folder below the root, so moving a caller cannot change it.
 */
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
