/**
 * The gateway's request-id rule, its one owner: a client's `x-request-id`, when sent, must be sent
 * once and be 1 to 200 characters of A-Z a-z 0-9 and the punctuation below; it is then echoed,
 * and any other value is refused before authentication (400 `invalid_body`), never echoed or
 * logged. An empty one counts as absent: the gateway makes a UUID (Envoy does so before its Lua
 * filter runs, test/e2e/hardening.test.ts; the embedder likewise). Envoy's Lua filter applies it at the edge (envoy/render.ts fills the pattern and the
 * length into envoy.yaml.tmpl), the embedder again behind it (a request that did not pass
 * Envoy), and openapi.yaml documents it; test/contract/request-id.unit.test.ts checks that the
 * four forms below accept exactly the same ids and that the OpenAPI document says the same.
 */

export const REQUEST_ID_HEADER = 'x-request-id';
export const REQUEST_ID_MAX_LENGTH = 200;
/** The punctuation an id may use besides letters and digits (URL- and log-safe: no space, quote or %). */
const PUNCTUATION = '._:/+=@-';

const classBody = `A-Za-z0-9${PUNCTUATION.replace(/[-\\\]^/]/g, (c) => `\\${c}`)}`;

/** The rule as a JavaScript expression (the embedder's check). */
export const REQUEST_ID_RULE = new RegExp(`^[${classBody}]{1,${REQUEST_ID_MAX_LENGTH}}$`);

/** The rule as a JSON Schema / OpenAPI `pattern` with `maxLength`; it admits the empty value, which counts as absent. */
export const REQUEST_ID_SCHEMA_PATTERN = `^[A-Za-z0-9${PUNCTUATION.replace('-', '')}-]*$`;

/**
 * The character rule as a Lua pattern, for Envoy's Lua filter (the length is checked apart):
 * `%w` is A-Z a-z 0-9 (Envoy's LuaJIT runs in the C locale), and `%` before a punctuation
 * character makes it literal.
 */
export const REQUEST_ID_LUA_PATTERN = `^[%w${[...PUNCTUATION].map((c) => `%${c}`).join('')}]+$`;

/** The rule in words, as the refusal's `detail` gives it after the header name. */
export const REQUEST_ID_RULE_TEXT = `must be sent once, 1 to ${REQUEST_ID_MAX_LENGTH} characters of A-Z a-z 0-9 ${[...PUNCTUATION].join(' ')}`;
