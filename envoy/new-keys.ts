/**
 * The new-key budget (ENVOY_NEW_KEY_RPS): how many Checks per second one Envoy sends authz for
 * keys it has not yet seen authz accept, so that a flood of junk keys, which are all new, costs
 * authz no more than that while the keys clients already use go on to authz unhindered.
 *
 * Two filters, just before ext_authz (after the per-source limit, whose refusals they never see):
 * - `known_keys`, a Lua filter: each Envoy worker remembers the `authorization` values authz has
 *   accepted (a 2xx, or authz's 403 or 429: the key was recognised), forgets one on a 401
 *   (revoked), and marks every other request that will reach ext_authz with
 *   `x-gateway-new-key: 1` (a request without a key too). Requests on routes where ext_authz is
 *   off (`/health`, the 404 and 405 routes) are left alone. The key travels from the request to
 *   the response handler in the stream's dynamic metadata, which no log, trace or Check carries.
 * - `new_keys`, a local_ratelimit filter, for the marked requests only: one token bucket shared by
 *   Envoy's workers (`rps` per second, bursts of twice that) and one per client address (2/5 of
 *   it); past either Envoy answers 503 `authorization_unavailable` with retry-after before authz
 *   is asked.
 *
 * This never decides who may pass: every request still goes to authz, seen key or not; the
 * budget only decides whose Checks wait for capacity. A key is learned per worker (Lua keeps no
 * state across them), so a client whose connection lands on a worker that has not seen its key
 * spends one token there first: the per-address share is what leaves it one during a flood
 * from another address.
 *
 * The same two filters run on the mesh's ingress gateway in Istio mode (istio-edge.ts), where
 * the policy's unchecked paths take the place of the template's route names.
 */
import { settingDefault } from '../contract/settings.js';
import { ADDRESSES_TRACKED, localRateLimitFilter } from './local-ratelimit.js';

/** The status the new-key budget refuses with before the local reply mapper makes it 503. */
export const NEW_KEY_REFUSED_STATUS = 510;

/** The header that marks a request whose key this Envoy worker has not seen authz accept. */
export const NEW_KEY_HEADER = 'x-gateway-new-key';

/** Keys one Envoy worker remembers; past it the table starts again empty (every key new once more). */
const KNOWN_KEYS_PER_WORKER = 20_000;

/**
 * The routes where ext_authz is off (envoy.yaml.tmpl): nothing on them reaches authz, so they
 * spend no budget. A unit test keeps this list equal to the template's.
 */
export const ROUTES_WITHOUT_AUTHZ = Object.freeze([
  'health',
  'health_method_not_allowed',
  'embeddings_method_not_allowed',
  'models_method_not_allowed',
  'model_method_not_allowed',
  'not_found',
]);

/** The declared default (contract/settings.ts argues it). */
export const NEW_KEY_RPS_DEFAULT = settingDefault('ENVOY_NEW_KEY_RPS');

/**
 * Where ext_authz is off, so nothing reaches authz and no budget is spent: the project's Envoy
 * names its routes (ROUTES_WITHOUT_AUTHZ); in Istio mode the AuthorizationPolicy names paths
 * (its notPaths), matched on the normalised path without its query.
 */
export type Unchecked = { readonly routes: readonly string[] } | { readonly paths: readonly string[] };

// Per worker: Envoy runs one Lua state per worker thread, and its globals live as long as it.
function knownKeysLua(unchecked: Unchecked): string {
  const table = (names: readonly string[]) => names.map((name) => `[${JSON.stringify(name)}] = true`).join(', ');
  const skip =
    'routes' in unchecked
      ? `local UNCHECKED = { ${table(unchecked.routes)} }
local function unchecked(request) return UNCHECKED[request:streamInfo():routeName()] end`
      : `local UNCHECKED = { ${table(unchecked.paths)} }
local function unchecked(request)
  local path = request:headers():get(":path") or ""
  return UNCHECKED[string.match(path, "^[^?]*")]
end`;
  return `local known, size = {}, 0
${skip}
function envoy_on_request(request)
  -- Only this filter marks: a client's own mark (a mesh Envoy does not strip x-gateway-*) is
  -- dropped, or a value other than 1 would make no descriptor and pass the budget.
  request:headers():remove("${NEW_KEY_HEADER}")
  if unchecked(request) then return end
  local key = request:headers():get("authorization")
  if key ~= nil then
    request:streamInfo():dynamicMetadata():set("ctg.known_keys", "key", key)
    if known[key] then return end
  end
  request:headers():add("${NEW_KEY_HEADER}", "1")
end
function envoy_on_response(response)
  local meta = response:streamInfo():dynamicMetadata():get("ctg.known_keys")
  if meta == nil or meta.key == nil then return end
  local key, status = meta.key, response:headers():get(":status")
  if status == "401" then
    if known[key] then known[key] = nil; size = size - 1 end
  elseif not known[key] and (string.sub(status, 1, 1) == "2" or status == "403" or status == "429") then
    if size >= ${KNOWN_KEYS_PER_WORKER} then known, size = {}, 0 end
    known[key] = true
    size = size + 1
  end
end
`;
}

/** The Lua filter that learns keys, as an http_filters entry. */
export function knownKeysFilterConfig(unchecked: Unchecked): object {
  return {
    name: 'known_keys',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua',
      default_source_code: { inline_string: knownKeysLua(unchecked) },
    },
  };
}

/** The Lua filter that learns keys, as one YAML flow item, or nothing when `rps` is 0. */
export function knownKeysFilter(rps: number): string {
  if (rps === 0) return '';
  return `- ${JSON.stringify(knownKeysFilterConfig({ routes: ROUTES_WITHOUT_AUTHZ }))}`;
}

/** The share of the budget one client address may take: 2/5, at least 1 a second. */
export function newKeyRpsPerSource(rps: number): number {
  return Math.max(1, Math.round((rps * 2) / 5));
}

/**
 * The new-key budget's local_ratelimit filter, as an http_filters entry: `rps` for the whole
 * Envoy, and 2/5 of it for any one client address, so one flooding address leaves the rest to
 * the others' new keys (and to a known key's first request on a worker that has not seen it
 * yet). Behind a load balancer that hides addresses, every client is one address.
 */
export function newKeyLimitConfig(rps: number): object {
  const marked = { request_headers: { header_name: NEW_KEY_HEADER, descriptor_key: 'new_key' } };
  return localRateLimitFilter({
    name: 'new_keys',
    statPrefix: 'new_keys',
    refusedStatus: NEW_KEY_REFUSED_STATUS,
    // A request without the mark makes neither descriptor and passes.
    descriptors: [
      { actions: [marked], entries: [{ key: 'new_key', value: '1' }], perSecond: rps },
      {
        actions: [marked, { remote_address: {} }],
        entries: [{ key: 'new_key', value: '1' }, { key: 'remote_address' }],
        perSecond: newKeyRpsPerSource(rps),
      },
    ],
    maxDynamic: ADDRESSES_TRACKED,
  });
}

/** The new-key budget's filter as one YAML flow item, or nothing when `rps` is 0. */
export function newKeyLimit(rps: number): string {
  if (rps === 0) return '';
  return `- ${JSON.stringify(newKeyLimitConfig(rps))}`;
}
