/**
 * The one translator of schema-validation errors, for every API built from a document in this
 * folder (the gateway's embedder and the admin API): ajv's errors become one `invalid_body`
 * detail that names the field, e.g.
 * "input: must contain at least 1 item"; the field becomes the problem's `error.param`. Messages are built from the schema's own words
 * (keyword and params), never from ajv's text or the data, so no input value can leak.
 */

/** The part of an ajv ErrorObject this module reads. */
export interface SchemaError {
  readonly keyword: string;
  readonly instancePath: string;
  readonly params: Record<string, unknown>;
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  array: 'an array',
  object: 'a JSON object',
  null: 'null',
};

/** "/input/3" → "input[3]"; the root is named `root` (e.g. "body"). */
function fieldName(instancePath: string, root: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (parts.length === 0) return root;
  return parts.reduce((name, part, i) => (/^\d+$/.test(part) ? `${name}[${part}]` : i === 0 ? part : `${name}.${part}`), '');
}

/** One error's message, without the field name. */
function describe(error: SchemaError): string {
  const p = error.params;
  switch (error.keyword) {
    // A union type (`[integer, 'null']`) arrives as an array or "integer,null".
    case 'type':
      return `must be ${String(p.type)
        .split(',')
        .map((t) => ARTICLE[t] ?? t)
        .join(' or ')}`;
    case 'minItems':
      return `must contain at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must contain at most ${String(p.limit)} items`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `must be ${String(p.allowedValue)}`;
    case 'minimum':
      return `must be at least ${String(p.limit)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}`;
    case 'pattern':
      return `must match ${String(p.pattern)}`;
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field';
    default:
      return 'is not valid';
  }
}

/** A refusal's field (for `error.param`) and message, formatted together as "field: message". */
interface ValidationFailure {
  readonly field: string;
  readonly message: string;
}

/**
 * Joins the failed branches of an `anyOf`/`oneOf` at one field into one sentence, e.g.
 * truncate_prompt_tokens 0 → "must be -1 or at least 2" (each branch reports what it wanted).
 */
function alternatives(errors: readonly SchemaError[]): string {
  const [first, ...rest] = [...new Set(errors.map(describe))];
  return [first!, ...rest.map((m) => m.replace(/^must be /, ''))].join(' or ');
}

/**
 * Picks the most useful error and names its field. `oneOf`/`anyOf` failures (input: string or
 * array; truncate_prompt_tokens: -1 or 2..512) report every branch the data failed.
 */
function validationFailure(errors: readonly SchemaError[], root = 'body'): ValidationFailure {
  const concrete = errors.filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf');
  const required = concrete.find((e) => e.keyword === 'required');
  if (required)
    return { field: fieldName(`${required.instancePath}/${String(required.params.missingProperty)}`, root), message: 'is required' };
  const unknown = concrete.find((e) => e.keyword === 'additionalProperties');
  if (unknown)
    return {
      field: fieldName(`${unknown.instancePath}/${String(unknown.params.additionalProperty)}`, root),
      message: 'is not a known field',
    };
  const nonType = concrete.filter((e) => e.keyword !== 'type');
  if (nonType.length > 0) {
    const deepest = nonType.reduce((a, b) => (b.instancePath.length > a.instancePath.length ? b : a));
    const here = nonType.filter((e) => e.instancePath === deepest.instancePath);
    const branched = errors.some((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && e.instancePath === deepest.instancePath);
    return { field: fieldName(deepest.instancePath, root), message: branched ? alternatives(here) : describe(deepest) };
  }
  if (concrete.length === 0) return { field: root, message: 'is not valid' };
  const deepest = concrete.reduce((a, b) => (b.instancePath.length > a.instancePath.length ? b : a));
  const types = concrete
    .filter((e) => e.instancePath === deepest.instancePath)
    .flatMap((e) => String(e.params.type).split(','))
    .map((t) => ARTICLE[t] ?? t);
  const list = [...new Set(types)];
  const wanted = list.length > 1 ? `${list.slice(0, -1).join(', ')} or ${list.at(-1)!}` : list[0]!;
  return { field: fieldName(deepest.instancePath, root), message: `must be ${wanted}` };
}

/** The `invalid_body` detail for ajv's errors: "field: message". */
export function validationDetail(errors: readonly SchemaError[], root = 'body'): string {
  const { field, message } = validationFailure(errors, root);
  return `${field}: ${message}`;
}
