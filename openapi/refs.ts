/**
 * Inlines an OpenAPI document's local `$ref`s so each schema stands alone for ajv. Shared by the
 * route loaders of the public API (embedder) and the admin API (admin): both take routes and
 * validation from their documents by operationId.
 */
type Json = Record<string, any>;

/** Returns `node` with every `#/...` reference replaced by its target; `drop` names annotation keys to leave out. */
export function inlineRefs(node: unknown, document: Json, drop: readonly string[] = [], seen: readonly string[] = []): any {
  if (Array.isArray(node)) return node.map((item) => inlineRefs(item, document, drop, seen));
  if (node === null || typeof node !== 'object') return node;
  const ref = (node as Json).$ref;
  if (typeof ref === 'string') {
    if (!ref.startsWith('#/') || seen.includes(ref)) throw new Error(`unsupported or cyclic $ref ${ref}`);
    const target = ref
      .slice(2)
      .split('/')
      .reduce<any>((at, key) => at?.[key], document);
    if (target === undefined) throw new Error(`dangling $ref ${ref}`);
    return inlineRefs(target, document, drop, [...seen, ref]);
  }
  const kept = Object.entries(node).filter(([key]) => !drop.includes(key));
  return Object.fromEntries(kept.map(([key, value]) => [key, inlineRefs(value, document, drop, seen)]));
}
