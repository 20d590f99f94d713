#!lua name=ctg_batch___CTG_TAG__
-- The Batch API's shared state: each batch's record and its lines' settlement, and the durable
-- queue that shares the batch's segments out to every embedder replica. Loaded by authz beside
-- the settlement library; called by the embedder (as its restricted Redis user) by name.
-- Identifiers and counts only, never text: the queue holds references (batch id, segment
-- number); the text lives sealed in the batch file store.
--
-- Every key lives under the settlement's secret namespace ROOT (rendered in by authz with the
-- prefix, settlement-keys.ts renderLibrary), and the caller names none: each call declares one
-- routing key and the functions derive every key from it and from arguments whose shape they
-- check (contract/redis/batch-keys.ts owns the names; docs/batch.md, "Shared state", the design).
-- Per organization, declared key <p>route:{org} (T = ROOT{org}:, one hash slot):
--   T batch:<id>       hash: status, times, counts, ids, key, model
--   T batch:<id>:l     hash: line -> a:<tokens> admitted, u:<tokens> recorded, f:<code> failed,
--                      r:<tokens> refunded
--   T batch:<id>:s     hash: segment -> done | skip
--   T batches          zset: the organization's batches by creation (ms)
--   T bq               stream of {b, s}; consumer group 'w'
--   T bopen            zset: batches not yet ended, by expiry (ms)
--   T bsealed          the highest index version a sweep found the organization idle at
--   and, read only, admin's <p>org:{org} (models) and <p>budget:{org}; the settlement's grant
--   record, usage stream, daily counters and month counter (T g:, T usage, T b:<month>).
-- The global work index, declared key <p>route:{:batch} (I = ROOT{:batch}:, one fixed slot):
--   I active           zset: organizations with queued work, by segments served
--   I open             zset: organizations with batches not yet ended, by soonest expiry (ms)
--   I ver              hash: organization -> version (from I seq), bumped by every enlist
-- No call touches both, so the protocol (docs/batch.md) needs no cross-slot atomicity: an
-- organization is enlisted (new version) before its batch is queued; it leaves an index only by
-- a compare-and-delete on the version a sweeper read before it found the organization idle and
-- sealed that version in the organization's slot; an open whose enlisted version is not above
-- the seal is refused and enlists again. So work queued is always indexed.
-- Exactly once: a line is admitted, then recorded (usage written) or failed, once; a segment is
-- committed once (its lines' usage and counts with it, and its queue entry acknowledged).

local GRANT_SKEW_MS = 5000
local GROUP = 'w'
local ROOT = '__CTG_ROOT__'
local PREFIX = '__CTG_PREFIX__'
local MONTH_TTL_MS = 40 * 86400000
local INDEX = ROOT .. '{:batch}:'
local INDEX_ROUTE = PREFIX .. 'route:{:batch}'

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function field(key, name)
  return redis.call('HGET', key, name)
end

-- The UTC day (YYYY-MM-DD) of a time in ms (civil_from_days, as settlement.lua).
local function utc_day(ms)
  local z = math.floor(ms / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- The organization named by the call's one declared key, <prefix>route:{<org>} (admin's rule for
-- an organization id: 1-64 of letters, digits and . _ -), or nil.
local ROUTE = PREFIX .. 'route:{'
local function org_of(keys)
  local k = keys[1]
  if type(k) ~= 'string' or string.sub(k, 1, #ROUTE) ~= ROUTE or string.sub(k, -1) ~= '}' then return nil end
  local org = string.sub(k, #ROUTE + 1, -2)
  if #org > 64 or not string.match(org, '^[%w][%w%._%-]*$') then return nil end
  return org
end

-- An organization id given as an argument (the index functions), by the same rule, or nil.
local function org_arg(raw)
  if type(raw) ~= 'string' or #raw > 64 or not string.match(raw, '^[%w][%w%._%-]*$') then return nil end
  return raw
end

-- A whole, non-negative count given as decimal digits (no sign, exponent or fraction).
local function count(raw)
  if type(raw) ~= 'string' or #raw > 15 or not string.match(raw, '^%d+$') then return nil end
  return tonumber(raw)
end

-- A batch id as the embedder makes them: letters, digits, _ and -, so it cannot steer a key name.
local function batch_id(raw)
  if type(raw) ~= 'string' or #raw == 0 or #raw > 100 or not string.match(raw, '^[%w_%-]+$') then return nil end
  return raw
end

-- The keys of one organization's batch state (T above).
local function org_keys(org)
  local t = ROOT .. '{' .. org .. '}:'
  return { t = t, list = t .. 'batches', stream = t .. 'bq', open = t .. 'bopen', sealed = t .. 'bsealed' }
end

-- A batch's record, lines and segments keys, from the declared routing key and the batch id; nil when either is malformed.
local function batch_keys(keys, raw)
  local org, batch = org_of(keys), batch_id(raw)
  if not org or not batch then return nil end
  local record = ROOT .. '{' .. org .. '}:batch:' .. batch
  return { org = org, batch = batch, record = record, lines = record .. ':l', segs = record .. ':s' }
end

-- Records that a sweeper found the organization idle at index version `v` (the seal only grows).
-- Only for an organization admin created (its record is in this slot): no other can have a
-- grant to open a batch with, and a caller naming made-up organizations creates no keys.
local function seal(org, k, v)
  if not redis.call('HGET', PREFIX .. 'org:{' .. org .. '}', 'id') then return end
  local before = tonumber(redis.call('GET', k.sealed) or '0')
  if v > before then redis.call('SET', k.sealed, v) end
end

-- Gives `tokens` a line reserved back to its batch's month counter (never below 0).
local function give_back_month(record, tokens)
  local month = ROOT .. '{' .. (field(record, 'org') or '') .. '}:b:' .. (field(record, 'month') or '')
  local left = redis.call('INCRBY', month, 0 - tokens)
  if left < 0 then redis.call('INCRBY', month, 0 - left) end
end

-- Declared key: <p>route:{org}. ARGV: grant uid, batch, input file, segments, lines, completion
-- window (ms), wrapped output key, wrapped error key, index version (what enlist answered). Consumes
-- the create request's grant once (its record, settlement.lua: state 'i' becomes 'b:<batch>'); the
-- organization, key and model are the grant record's. The same grant again (Envoy's retry to
-- another replica) answers the batch it created.
-- Returns {0, batch} opened, {1, batch} opened before by this grant, {2, ''} grant unknown or
-- expired, {3, ''} grant used for something else, {4, ''} the version is not above the seal
-- (a sweeper found the organization idle after that enlist: enlist again, then open).
local function open(keys, args)
  local uid = args[1]
  local b = batch_keys(keys, args[2])
  if type(uid) ~= 'string' or #uid < 8 or #uid > 64 or not string.match(uid, '^[%x%-]+$') then return { 2, '' } end
  if not b then return { 2, '' } end
  local segments, lines, window, version = count(args[4]), count(args[5]), count(args[6]), count(args[9])
  if not segments or not lines or not window or not version or segments > 100000 then return { 3, '' } end
  local k = org_keys(b.org)
  local grant = k.t .. 'g:' .. uid
  local now = now_ms()
  local g = redis.call('HMGET', grant, 'state', 'exp', 'org', 'key', 'model', 'month')
  if not g[1] then return { 2, '' } end
  local earlier = string.match(g[1], '^b:(.+)$')
  if earlier then return { 1, earlier } end
  if g[1] ~= 'i' then return { 3, '' } end
  if now > tonumber(g[2]) + GRANT_SKEW_MS then return { 2, '' } end
  if g[3] ~= b.org then return { 2, '' } end
  if version <= tonumber(redis.call('GET', k.sealed) or '0') then return { 4, '' } end
  redis.call('HSET', grant, 'state', 'b:' .. b.batch)
  redis.call('PEXPIRE', grant, window + 86400000)
  redis.call('HSET', b.record, 'id', b.batch, 'org', b.org, 'key', g[4], 'model', g[5], 'input_file_id', args[3],
    'segments', segments, 'total', lines, 'completed', 0, 'failed', 0, 'segments_done', 0,
    'status', 'in_progress', 'created_at', now, 'in_progress_at', now, 'expires_at', now + window,
    'dek_out', args[7], 'dek_err', args[8], 'month', g[6])
  redis.call('ZADD', k.list, now, b.batch)
  redis.call('ZADD', k.open, now + window, b.batch)
  redis.pcall('XGROUP', 'CREATE', k.stream, GROUP, '0', 'MKSTREAM')
  for s = 0, segments - 1 do
    redis.call('XADD', k.stream, '*', 'b', b.batch, 's', s)
  end
  return { 0, b.batch }
end

-- Marks segment `s` of a batch that no longer runs as skipped; true when that ended the batch's work.
local function skip(record, segs, s)
  if redis.call('HSETNX', segs, s, 'skip') == 0 then return false end
  local done = redis.call('HINCRBY', record, 'segments_done', 1)
  return done >= tonumber(field(record, 'segments'))
end

local function to_finalizing(record)
  local status = field(record, 'status')
  if status == 'in_progress' then
    redis.call('HSET', record, 'status', 'finalizing', 'finalizing_at', now_ms())
  elseif status == 'cancelling' or status == 'expired' or status == 'failed' then
    redis.call('HSETNX', record, 'finalizing_at', now_ms())
  end
end

-- Declared key: <p>route:{org}. ARGV: consumer, lease (ms: an entry idle this long was left by a
-- dead worker), index version (what candidates answered). Reclaims an abandoned entry of the
-- organization's queue or reads a new one, skipping segments of batches that stopped.
-- Returns {batch, segment, entry id, task} with task 'run' or 'finalize'; {'idle'} when the
-- queue is empty with nothing pending (the stream is emptied, its group kept, and the version
-- sealed: the caller may now retire the organization from the index); {} when nothing is free now.
local function take(keys, args)
  local org = org_of(keys)
  local consumer, lease, version = args[1], count(args[2]), count(args[3])
  if not org or type(consumer) ~= 'string' or #consumer > 200 or not lease or not version then return {} end
  local k = org_keys(org)
  for _ = 1, 64 do
    if redis.call('EXISTS', k.stream) == 0 then
      seal(org, k, version)
      return { 'idle' }
    end
    local entry = nil
    local reclaimed = redis.call('XAUTOCLAIM', k.stream, GROUP, consumer, lease, '0-0', 'COUNT', 1)
    if reclaimed[2] and reclaimed[2][1] then entry = reclaimed[2][1] end
    if not entry then
      local fresh = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', 1, 'STREAMS', k.stream, '>')
      if fresh and fresh[1] and fresh[1][2][1] then entry = fresh[1][2][1] end
    end
    if not entry then
      local pending = redis.call('XPENDING', k.stream, GROUP)
      if tonumber(pending[1]) ~= 0 then return {} end
      redis.call('XTRIM', k.stream, 'MAXLEN', 0)
      seal(org, k, version)
      return { 'idle' }
    end
    local id, fields = entry[1], entry[2]
    local batch, s = fields[2], fields[4]
    local record = k.t .. 'batch:' .. batch
    local status = field(record, 'status')
    if status == 'in_progress' then return { batch, s, id, 'run' } end
    redis.call('XACK', k.stream, GROUP, id)
    if status and skip(record, record .. ':s', s) then
      to_finalizing(record)
      return { batch, s, id, 'finalize' }
    end
  end
  return {}
end

-- Declared key: <p>route:{org}. ARGV: consumer, entry id. Resets the entry's idle time: the worker is alive.
local function heartbeat(keys, args)
  local org = org_of(keys)
  if not org or type(args[2]) ~= 'string' or not string.match(args[2], '^%d+%-%d+$') then return 0 end
  return #redis.call('XCLAIM', org_keys(org).stream, GROUP, args[1], 0, args[2], 'JUSTID')
end

-- Declared key: <p>route:{org}. ARGV: batch, then pairs of line, tokens. Checks, per call, that
-- the batch still runs, the organization may still use the batch's model (admin's <p>org:{org}),
-- and a hard-stop budget (<p>budget:{org}) can take the lines (reserving them in the settlement's
-- month counter, as an online request's admission does); then admits each line once. Returns one
-- code per line: 0 admitted, 1 recorded before, 2 failed before, 3 batch stopped, 4 model not
-- enabled, 5 over budget, 6 not a line of the batch or not a token count.
local function admit(keys, args)
  local out = {}
  local n = math.floor((#args - 1) / 2)
  local b = batch_keys(keys, args[1])
  if not b then
    for i = 1, n do out[i] = 3 end
    return out
  end
  local refuse = nil
  local status = field(b.record, 'status')
  if status ~= 'in_progress' and status ~= 'cancelling' then refuse = 3 end
  if not refuse then
    local ok, models = pcall(cjson.decode, field(PREFIX .. 'org:{' .. b.org .. '}', 'models') or '[]')
    local model, allowed = field(b.record, 'model'), false
    if ok and type(models) == 'table' then
      for _, m in ipairs(models) do if m == model then allowed = true end end
    end
    if not allowed then refuse = 4 end
  end
  local total = tonumber(field(b.record, 'total') or '0')
  local month = ROOT .. '{' .. b.org .. '}:b:' .. (field(b.record, 'month') or '')
  local budget = nil
  local budget_key = PREFIX .. 'budget:{' .. b.org .. '}'
  if not refuse and field(budget_key, 'hard_stop') == '1' then budget = tonumber(field(budget_key, 'monthly_tokens') or '0') end
  local used = tonumber(redis.call('GET', month) or '0')
  local reserved = 0
  for i = 1, n do
    local line, raw = args[2 * i], args[2 * i + 1]
    local tokens = count(raw)
    local index = count(line)
    local state = index and redis.call('HGET', b.lines, line)
    if state and string.sub(state, 1, 2) == 'u:' then out[i] = 1
    elseif state and string.sub(state, 1, 2) == 'f:' then out[i] = 2
    elseif refuse then out[i] = refuse
    elseif not tokens or not index or index >= total or tostring(index) ~= line then out[i] = 6
    elseif state == 'a:' .. raw then out[i] = 0
    elseif budget and used + tokens > budget then out[i] = 5
    else
      -- A line admitted before for other tokens (never the same text twice) releases those first.
      local before = state and tonumber(string.match(state, '^a:(%d+)$'))
      if before then reserved, used = reserved - before, used - before end
      used = used + tokens
      reserved = reserved + tokens
      redis.call('HSET', b.lines, line, 'a:' .. tokens)
      out[i] = 0
    end
  end
  if reserved ~= 0 then
    redis.call('INCRBY', month, reserved)
    redis.call('PEXPIRE', month, MONTH_TTL_MS)
  end
  return out
end

-- Declared key: <p>route:{org}. ARGV: batch, segment, entry id, then triples of line, outcome ('u'
-- or 'f'), tokens or problem code. Commits one segment once: each admitted line's usage (kind
-- batch, for exactly its admitted tokens, billed to the batch record's organization, key and
-- model, at Redis's clock) or each failed line, the counts, and the queue acknowledgement, all
-- together. Returns {recorded now, failed now, 1 when this ended the batch's work}.
local function commit(keys, args)
  local b = batch_keys(keys, args[1])
  local s, entry = count(args[2]), args[3]
  if not b or not s or type(entry) ~= 'string' or not string.match(entry, '^%d+%-%d+$') then return { 0, 0, 0 } end
  local org, key_id, model, batch = field(b.record, 'org'), field(b.record, 'key'), field(b.record, 'model'), field(b.record, 'id')
  if not batch or s >= tonumber(field(b.record, 'segments')) then return { 0, 0, 0 } end
  local time = now_ms()
  local daily = ROOT .. '{' .. org .. '}:usage:daily:' .. utc_day(time)
  local recorded, failed = 0, 0
  for i = 4, #args, 3 do
    local line, outcome, value = args[i], args[i + 1], args[i + 2]
    local state = redis.call('HGET', b.lines, line)
    if outcome == 'u' and state == 'a:' .. value then
      redis.call('HSET', b.lines, line, 'u:' .. value)
      redis.call('XADD', ROOT .. '{' .. org .. '}:usage', '*', 'org', org, 'key', key_id, 'model', model, 'request_id', batch .. ':' .. line,
        'tokens', value, 'ts', time, 'kind', 'batch', 'batch', batch)
      local n = tonumber(value)
      redis.call('HINCRBY', daily, 'requests', 1)
      redis.call('HINCRBY', daily, 'tokens', n)
      redis.call('HINCRBY', daily, 'requests:' .. model, 1)
      redis.call('HINCRBY', daily, 'tokens:' .. model, n)
      redis.call('HINCRBY', daily, 'batch_tokens', n)
      recorded = recorded + 1
    elseif outcome == 'f' and (not state or string.sub(state, 1, 2) == 'a:' or string.sub(state, 1, 2) == 'r:') then
      local back = state and tonumber(string.match(state, '^a:(%d+)$'))
      if back then give_back_month(b.record, back) end
      redis.call('HSET', b.lines, line, 'f:' .. value)
      failed = failed + 1
    end
  end
  if recorded > 0 then redis.call('HINCRBY', b.record, 'completed', recorded) end
  if failed > 0 then redis.call('HINCRBY', b.record, 'failed', failed) end
  redis.call('XACK', org_keys(org).stream, GROUP, entry)
  local ended = 0
  if redis.call('HSETNX', b.segs, s, 'done') == 1 then
    local done = redis.call('HINCRBY', b.record, 'segments_done', 1)
    if done >= tonumber(field(b.record, 'segments')) then
      to_finalizing(b.record)
      ended = 1
    end
  end
  return { recorded, failed, ended }
end

-- Declared key: <p>route:{org}. ARGV: batch. Stops a running batch: 'cancelling' until its segments are drained. Returns the status.
local function cancel(keys, args)
  local b = batch_keys(keys, args[1])
  if not b then return '' end
  local status = field(b.record, 'status')
  if status == 'in_progress' or status == 'validating' then
    redis.call('HSET', b.record, 'status', 'cancelling', 'cancelling_at', now_ms())
    return 'cancelling'
  end
  return status or ''
end

-- Declared key: <p>route:{org}. ARGV: batch. Ends a running batch whose completion window has passed. Returns the status.
local function expire(keys, args)
  local b = batch_keys(keys, args[1])
  if not b then return '' end
  local status = field(b.record, 'status')
  if status == 'in_progress' and now_ms() >= tonumber(field(b.record, 'expires_at')) then
    redis.call('HSET', b.record, 'status', 'expired', 'expired_at', now_ms())
    return 'expired'
  end
  return status or ''
end

-- Declared key: <p>route:{org}. ARGV: batch, output file id, error file id, keep (ms: how long
-- the record outlives its end). Ends a batch whose work is over: admitted lines never recorded
-- are refunded, the final status and file ids set, the keys given their retention. Idempotent.
local function finish(keys, args)
  local b = batch_keys(keys, args[1])
  local keep = count(args[4])
  if not b or not keep then return '' end
  local status = field(b.record, 'status')
  if not status then return '' end
  local final = ({ finalizing = 'completed', cancelling = 'cancelled', expired = 'expired', failed = 'failed' })[status]
  if not final then return status end
  local lines = redis.call('HGETALL', b.lines)
  for i = 1, #lines, 2 do
    local tokens = string.match(lines[i + 1], '^a:(%d+)$')
    if tokens then
      redis.call('HSET', b.lines, lines[i], 'r:' .. tokens)
      give_back_month(b.record, tonumber(tokens))
    end
  end
  local now = now_ms()
  redis.call('HSET', b.record, 'status', final, 'output_file_id', args[2], 'error_file_id', args[3])
  if final == 'completed' then redis.call('HSET', b.record, 'completed_at', now) end
  if final == 'cancelled' then redis.call('HSET', b.record, 'cancelled_at', now) end
  if final == 'failed' then redis.call('HSETNX', b.record, 'failed_at', now) end
  redis.call('ZREM', org_keys(b.org).open, b.batch)
  for _, key in ipairs({ b.record, b.lines, b.segs }) do redis.call('PEXPIRE', key, keep) end
  return final
end

-- Declared key: <p>route:{org}. ARGV: batch, error code. Fails a running batch (its input can no longer be read).
local function fail(keys, args)
  local b = batch_keys(keys, args[1])
  if not b then return '' end
  local status = field(b.record, 'status')
  if status == 'in_progress' or status == 'cancelling' then
    redis.call('HSET', b.record, 'status', 'failed', 'failed_at', now_ms(), 'error', args[2])
  end
  return field(b.record, 'status') or ''
end

-- Declared key: <p>route:{org}. ARGV: batch. The record as a flat list ({} when none).
local function get(keys, args)
  local b = batch_keys(keys, args[1])
  if not b then return {} end
  return redis.call('HGETALL', b.record)
end

-- Declared key: <p>route:{org}. ARGV: before (ms, exclusive; '+inf' for the newest), limit. Newest first.
local function list(keys, args)
  local org, limit = org_of(keys), count(args[2])
  if not org or not limit or (args[1] ~= '+inf' and not count(args[1])) then return {} end
  local max = args[1] == '+inf' and '+inf' or '(' .. args[1]
  return redis.call('ZRANGE', org_keys(org).list, max, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, limit, 'WITHSCORES')
end

-- Declared key: <p>route:{org}. ARGV: limit, index version (what expiring answered). The
-- organization's batches not yet ended, soonest expiry first (batch, expiry); when there are
-- none, the version is sealed (the caller may retire the organization from the index's open set).
local function unfinished(keys, args)
  local org, limit, version = org_of(keys), count(args[1]), count(args[2])
  if not org or not limit or not version then return {} end
  local k = org_keys(org)
  local out = redis.call('ZRANGE', k.open, 0, limit - 1, 'WITHSCORES')
  if #out == 0 then seal(org, k, version) end
  return out
end

-- The global work index: declared key <p>route:{:batch}; anything else is refused.
local function index_call(keys)
  return keys[1] == INDEX_ROUTE
end

-- ARGV: org, expiry (ms). Before the organization's batch is queued: it joins the work index (a
-- newcomer level with the least-served organization: no credit for having been idle) and the
-- open index (its soonest expiry kept), under a new version. Returns the version (0 refused).
local function enlist(keys, args)
  local org, expiry = org_arg(args[1]), count(args[2])
  if not index_call(keys) or not org or not expiry then return 0 end
  local version = redis.call('INCR', INDEX .. 'seq')
  redis.call('HSET', INDEX .. 'ver', org, version)
  local least = redis.call('ZRANGE', INDEX .. 'active', 0, 0, 'WITHSCORES')
  redis.call('ZADD', INDEX .. 'active', 'NX', least[2] or 0, org)
  redis.call('ZADD', INDEX .. 'open', 'LT', expiry, org)
  return version
end

-- Flat (org, version) pairs.
local function with_versions(orgs, step)
  local out = {}
  for i = 1, #orgs, step do
    for j = 0, step - 1 do out[#out + 1] = orgs[i + j] end
    out[#out + 1] = redis.call('HGET', INDEX .. 'ver', orgs[i]) or '0'
  end
  return out
end

-- ARGV: limit. Organizations with work, least served first: flat (org, version).
local function candidates(keys, args)
  local limit = count(args[1])
  if not index_call(keys) or not limit or limit == 0 then return {} end
  return with_versions(redis.call('ZRANGE', INDEX .. 'active', 0, limit - 1), 1)
end

-- ARGV: limit. Organizations with batches not yet ended, soonest expiry first: flat (org, expiry, version).
local function expiring(keys, args)
  local limit = count(args[1])
  if not index_call(keys) or not limit or limit == 0 then return {} end
  return with_versions(redis.call('ZRANGE', INDEX .. 'open', 0, limit - 1, 'WITHSCORES'), 2)
end

-- ARGV: org. One segment served to the organization (only while it is in the work index).
local function served(keys, args)
  local org = org_arg(args[1])
  if not index_call(keys) or not org then return 0 end
  return redis.call('ZADD', INDEX .. 'active', 'XX', 'INCR', 1, org) and 1 or 0
end

-- ARGV: org, version, 'active' or 'open'. Removes the organization from that index only if its
-- version is still the one the caller read before it found the organization idle (and sealed it
-- there): an enlist since then changed it, and the organization stays. Out of both indexes, its
-- version goes too (a retire still holding it then finds none). Returns 1 removed, 0 not.
local function retire(keys, args)
  local org, version, which = org_arg(args[1]), count(args[2]), args[3]
  if not index_call(keys) or not org or not version or (which ~= 'active' and which ~= 'open') then return 0 end
  if tonumber(redis.call('HGET', INDEX .. 'ver', org) or '-1') ~= version then return 0 end
  local removed = redis.call('ZREM', INDEX .. which, org)
  if not redis.call('ZSCORE', INDEX .. 'active', org) and not redis.call('ZSCORE', INDEX .. 'open', org) then
    redis.call('HDEL', INDEX .. 'ver', org)
  end
  return removed
end

-- ARGV: org, expiry (ms). The organization's soonest expiry in the open index, as its sweep found
-- it (only while it is there): the sweep visits the soonest first. An organization with a batch
-- not yet ended is put back in the work index if it is missing there (level with the least
-- served): a retire by whoever holds the embedder's password cannot strand queued work for
-- longer than a sweep; with nothing queued, the next claim retires it again.
local function reschedule(keys, args)
  local org, expiry = org_arg(args[1]), count(args[2])
  if not index_call(keys) or not org or not expiry then return 0 end
  local changed = redis.call('ZADD', INDEX .. 'open', 'XX', 'CH', expiry, org)
  if changed == 0 and not redis.call('ZSCORE', INDEX .. 'open', org) then return 0 end
  local least = redis.call('ZRANGE', INDEX .. 'active', 0, 0, 'WITHSCORES')
  redis.call('ZADD', INDEX .. 'active', 'NX', least[2] or 0, org)
  return 1
end

redis.register_function('ctg_batch_open___CTG_TAG__', open)
redis.register_function('ctg_batch_take___CTG_TAG__', take)
redis.register_function('ctg_batch_heartbeat___CTG_TAG__', heartbeat)
redis.register_function('ctg_batch_admit___CTG_TAG__', admit)
redis.register_function('ctg_batch_commit___CTG_TAG__', commit)
redis.register_function('ctg_batch_cancel___CTG_TAG__', cancel)
redis.register_function('ctg_batch_expire___CTG_TAG__', expire)
redis.register_function('ctg_batch_finish___CTG_TAG__', finish)
redis.register_function('ctg_batch_fail___CTG_TAG__', fail)
redis.register_function('ctg_batch_unfinished___CTG_TAG__', unfinished)
redis.register_function('ctg_batch_enlist___CTG_TAG__', enlist)
redis.register_function('ctg_batch_served___CTG_TAG__', served)
redis.register_function('ctg_batch_retire___CTG_TAG__', retire)
redis.register_function('ctg_batch_reschedule___CTG_TAG__', reschedule)
redis.register_function { function_name = 'ctg_batch_get___CTG_TAG__', callback = get, flags = { 'no-writes' } }
redis.register_function { function_name = 'ctg_batch_list___CTG_TAG__', callback = list, flags = { 'no-writes' } }
redis.register_function { function_name = 'ctg_batch_candidates___CTG_TAG__', callback = candidates, flags = { 'no-writes' } }
redis.register_function { function_name = 'ctg_batch_expiring___CTG_TAG__', callback = expiring, flags = { 'no-writes' } }
