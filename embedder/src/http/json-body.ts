/**
 * The gateway's one JSON body parser. Envoy no longer parses bodies, so what this accepts is the
 * definition of a valid body everywhere: UTF-8 only (no silent U+FFFD replacement), no lone
 * surrogates (neither raw nor as `\ud800` escapes, in values or keys), at most MAX_JSON_DEPTH
 * levels of nesting, and no prototype-poisoning keys. A refusal names `body`; no part of the
 * body is ever echoed.
 */
import { ProblemError } from '../../../openapi/problems.js';

/** A valid embedding request nests two levels (object → array); ignored fields get some slack. */
export const MAX_JSON_DEPTH = 32;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Decodes, checks and parses one request body; throws ProblemError('invalid_body') when it is not acceptable. */
export function parseJsonBody(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new ProblemError('invalid_body', 'body: must be UTF-8 encoded');
  }
  if (text.trim() === '') throw new ProblemError('invalid_body', 'body: must not be empty');
  if (nestingDepth(text) > MAX_JSON_DEPTH) {
    throw new ProblemError('invalid_body', `body: must not nest deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text, checkValue);
  } catch (error) {
    if (error instanceof ProblemError) throw error;
    throw new ProblemError('invalid_body', 'body: must be valid JSON');
  }
}

// JSON.parse calls this bottom-up for every member and element, keys included.
function checkValue(this: unknown, key: string, value: unknown): unknown {
  if (!key.isWellFormed() || (typeof value === 'string' && !value.isWellFormed())) {
    throw new ProblemError('invalid_body', 'body: must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)');
  }
  // Dropping these keeps a parsed body from ever reaching an object's prototype.
  if (key === '__proto__' || (key === 'constructor' && typeof value === 'object' && value !== null && 'prototype' in value)) {
    return undefined;
  }
  return value;
}

/** The deepest nesting of objects and arrays in `text`, ignoring brackets inside strings. */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}
