/**
 * The tag make test-images gives the images it builds: CTG_IMAGE_TAG, else `test-` and a hash of
 * the checkout's path, the same as scripts/images/lib.sh's image_tag. podman's storage is the
 * machine's, so two checkouts testing their images at once must not overwrite each other's.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { repoRoot } from '../../contract/repo-root.js';

const checkout = realpathSync(repoRoot);

/** The tag of this checkout's test images. */
function imageTag(): string {
  return process.env.CTG_IMAGE_TAG || `test-${createHash('sha256').update(checkout).digest('hex').slice(0, 8)}`;
}

/** localhost/ctg-NAME:<this checkout's tag>. */
export function localImage(name: string): string {
  return `localhost/ctg-${name}:${imageTag()}`;
}
