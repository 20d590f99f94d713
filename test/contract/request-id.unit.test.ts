/**
 * The request-id rule has one owner (contract/request-id.ts), and every place that applies or
 * documents it says the same: the embedder's expression, the OpenAPI parameter, Envoy's Lua
 * filter as rendered, the settlement functions' copy, and the refusal's detail accept exactly the same ids.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../../contract/repo-root.js';
import { localReplyBody } from '../../envoy/local-replies.js';
import { renderEnvoyConfig, settingsFromEnv } from '../../envoy/render.js';
import { openapiDocument } from '../../openapi/document.js';
import {
  REQUEST_ID_LUA_PATTERN,
  REQUEST_ID_MAX_LENGTH,
  REQUEST_ID_RULE,
  REQUEST_ID_RULE_TEXT,
  REQUEST_ID_SCHEMA_PATTERN,
} from '../../contract/request-id.js';

/** A Lua pattern of the form `^[class]+$` as a JavaScript RegExp (`%w` letters and digits, `%x` a literal x). */
function luaClassPattern(pattern: string): RegExp {
  const m = /^\^\[(.*)\]\+\$$/.exec(pattern);
  if (!m) throw new Error(`not a ^[class]+$ Lua pattern: ${pattern}`);
  const parts = [...m[1]!.matchAll(/%(.)|(.)/g)].map(([, escaped, plain]) => {
    if (escaped === 'w') return 'A-Za-z0-9';
    if (escaped !== undefined) return /[A-Za-z0-9]/.test(escaped) ? `%${escaped}` : `\\${escaped}`;
    return plain === '-' ? '\\-' : plain!;
  });
  return new RegExp(`^[${parts.join('')}]+$`);
}

/** Every single character of the first 256 code points, and a few beyond. */
const CHARACTERS = [...Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)), 'é', 'Ж', '€', '😀'];
/** What the rule accepts, as the lengths 1, 200 and 201 of each character. */
const verdicts = (accepts: (id: string) => boolean) =>
  CHARACTERS.map((c) => [c, accepts(c), accepts(c.repeat(REQUEST_ID_MAX_LENGTH)), accepts(c.repeat(REQUEST_ID_MAX_LENGTH + 1))]);

const rendered = renderEnvoyConfig(settingsFromEnv({ TLS_CERT_FILE: '/tls/cert.pem', TLS_KEY_FILE: '/tls/key.pem' }));
const luaSource: string = parse(rendered).static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters.find(
  (f: { name: string }) => f.name === 'envoy.filters.http.lua',
).typed_config.default_source_code.inline_string;
const parameter = openapiDocument.components.parameters.RequestId;

describe('the request-id rule', () => {
  it('accepts 1 to 200 of A-Z a-z 0-9 . _ : / + = @ - and nothing else', () => {
    const accepted = CHARACTERS.filter((c) => REQUEST_ID_RULE.test(c)).join('');
    expect(accepted).toBe('+-./0123456789:=@ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz');
    expect(REQUEST_ID_RULE.test('')).toBe(false);
    expect(REQUEST_ID_RULE.test('a'.repeat(200))).toBe(true);
    expect(REQUEST_ID_RULE.test('a'.repeat(201))).toBe(false);
    expect(REQUEST_ID_RULE.test('a\nb')).toBe(false);
  });

  it("Envoy's rendered Lua filter applies the same rule (its pattern and its length)", () => {
    expect(luaSource).toContain(`#id <= ${REQUEST_ID_MAX_LENGTH} and string.match(id, "${REQUEST_ID_LUA_PATTERN}")`);
    const lua = luaClassPattern(REQUEST_ID_LUA_PATTERN);
    expect(verdicts((id) => id.length <= REQUEST_ID_MAX_LENGTH && lua.test(id))).toEqual(verdicts((id) => REQUEST_ID_RULE.test(id)));
  });

  it("the settlement functions' own copy (settlement.lua cannot import it) is the same rule", () => {
    const settlement = readFileSync(join(repoRoot, 'contract/redis/settlement.lua'), 'utf8');
    const pattern = /^local REQUEST_ID = '([^']+)'$/m.exec(settlement)?.[1];
    const lengths = [...settlement.matchAll(/#request_id > (\d+)/g)].map((m) => Number(m[1]));
    expect(pattern, 'local REQUEST_ID').toBeDefined();
    expect(lengths.length, '#request_id > …').toBeGreaterThan(0);
    expect(new Set(lengths)).toEqual(new Set([REQUEST_ID_MAX_LENGTH]));
    const lua = luaClassPattern(pattern!);
    expect(verdicts((id) => id.length <= REQUEST_ID_MAX_LENGTH && lua.test(id))).toEqual(verdicts((id) => REQUEST_ID_RULE.test(id)));
  });

  it('the OpenAPI parameter documents the same rule', () => {
    expect(parameter.schema).toEqual({ type: 'string', maxLength: REQUEST_ID_MAX_LENGTH, pattern: REQUEST_ID_SCHEMA_PATTERN });
    const schema = new RegExp(REQUEST_ID_SCHEMA_PATTERN);
    const accepts = (id: string) => id.length <= REQUEST_ID_MAX_LENGTH && schema.test(id);
    expect(verdicts(accepts)).toEqual(verdicts((id) => REQUEST_ID_RULE.test(id)));
    // The schema also admits the empty value, which the gateway treats as absent (a fresh UUID).
    expect(accepts('')).toBe(true);
    expect(parameter.description).toContain('When absent, or sent empty, the gateway generates a UUID');
    expect(parameter.description).toContain(`up to ${REQUEST_ID_MAX_LENGTH} characters of \`A-Z a-z 0-9 . _ : / + = @ -\``);
  });

  it("Envoy's refusal says the rule in words", () => {
    expect(JSON.parse(localReplyBody('PROBLEM_INVALID_REQUEST_ID')).detail).toBe(`x-request-id: ${REQUEST_ID_RULE_TEXT}`);
    expect(REQUEST_ID_RULE_TEXT).toBe('must be sent once, 1 to 200 characters of A-Z a-z 0-9 . _ : / + = @ -');
  });

  it('the Lua translation the check relies on is right', () => {
    expect(luaClassPattern('^[%w%-%.]+$').source).toBe('^[A-Za-z0-9\\-\\.]+$');
    expect(() => luaClassPattern('^%w+$')).toThrow();
  });
});
