/**
 * Pins an overlay's images by digest: `npx tsx scripts/images/pin-overlay.ts OVERLAY_DIR
 * NAME=REGISTRY/REPO:TAG@sha256:DIGEST …` rewrites the `images:` entries of
 * OVERLAY_DIR/kustomization.yaml named NAME (ctg-authz, ctg-embedder, ctg-gateway,
 * ctg-embedder-nomodel, ctg-redis) to that repository, tag and digest, keeping its comments.
 * Kubernetes then pulls exactly the image that was built and tested (the tag stays for people);
 * the digest is what `podman push --digestfile`, `docker buildx build --push --metadata-file` or
 * `skopeo inspect --format '{{.Digest}}'` gives. Refuses a reference without a digest and a name
 * the overlay does not have.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isSeq, parseDocument } from 'yaml';

/** `repo:tag@sha256:hex`, split; throws unless it names a tag and a sha256 digest. */
export function parseImageRef(ref: string): { name: string; tag: string; digest: string } {
  const m = /^([a-z0-9]+(?:[._-][a-z0-9]+)*(?::\d+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)+):([\w][\w.-]{0,127})@(sha256:[0-9a-f]{64})$/.exec(
    ref,
  );
  if (!m) throw new Error(`${ref}: expected REGISTRY/REPO:TAG@sha256:<64 hex digits>`);
  return { name: m[1]!, tag: m[2]!, digest: m[3]! };
}

/** The kustomization text with each named image entry set to its reference; throws on an unknown name. */
export function pinImages(kustomization: string, refs: Readonly<Record<string, string>>): string {
  const doc = parseDocument(kustomization);
  const images = doc.get('images');
  if (!isSeq(images)) throw new Error('the kustomization has no images: list');
  for (const [logical, ref] of Object.entries(refs)) {
    const { name, tag, digest } = parseImageRef(ref);
    const entry = images.items.find((item) => isMap(item) && item.get('name') === logical);
    if (!isMap(entry)) throw new Error(`the kustomization's images: has no ${logical}`);
    entry.set('newName', name);
    entry.set('newTag', tag);
    entry.set('digest', digest);
  }
  return doc.toString({ lineWidth: 0 });
}

const [overlay, ...pairs] = process.argv.slice(2);
if (overlay && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const refs = Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new Error(`${pair}: expected NAME=REGISTRY/REPO:TAG@sha256:DIGEST`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
  const file = join(overlay, 'kustomization.yaml');
  writeFileSync(file, pinImages(readFileSync(file, 'utf8'), refs));
}
