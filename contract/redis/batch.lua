#!lua name=ctg_batch___CTG_TAG__
-- The Batch API's shared state: each batch's record and its lines' settlement, and the durable
-- queue that shares the batch's segments out to every embedder replica. Loaded by authz beside
-- the settlement library; called by the embedder (as its restricted Redis user) by name.
-- Identifiers and counts only, never text: the queue holds references (batch id, segment
-- number); the text lives sealed in the batch file store.
--
-- Usage and the hard stop's month counter are the settlement's, under its secret namespace ROOT
-- (settlement.lua; rendered in by authz with the prefix, settlement-keys.ts renderLibrary): the
-- caller names none of them, and the organization, key and model billed come from the records
-- the functions wrote (the grant record at open, the batch record after), never from arguments.
-- Keys (the caller builds them, contract/redis/batch-keys.ts; records carry the {org} hash tag):
--   record   <p>b:{org}:<batch>        hash: status, times, counts, ids, key, model
--   lines    <p>b:{org}:<batch>:l      hash: line -> a:<tokens> admitted, u:<tokens> recorded,
--                                       f:<code> failed, r:<tokens> refunded
--   segs     <p>b:{org}:<batch>:s      hash: segment -> done | skip
--   index    <p>b:{org}:index          zset: the organization's batches by creation (ms)
--   stream   <p>bq:<org>               stream of {b, s} per organization; consumer group 'w'
--   active   <p>bq:active              zset: organizations with queued work, by segments served
--   open     <p>bq:open                zset: 'org/batch' of batches not yet ended, by expiry (ms)
-- Exactly once: a line is admitted, then recorded (usage written) or failed, once; a segment is
-- committed once (its lines' usage and counts with it, and its queue entry acknowledged).

local GRANT_SKEW_MS = 5000
local GROUP = 'w'
local ROOT = '__CTG_ROOT__'
local PREFIX = '__CTG_PREFIX__'
local MONTH_TTL_MS = 40 * 86400000

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

-- Gives `tokens` a line reserved back to its batch's month counter (never below 0).
local function give_back_month(record, tokens)
  local month = ROOT .. '{' .. (field(record, 'org') or '') .. '}:b:' .. (field(record, 'month') or '')
  local left = redis.call('INCRBY', month, 0 - tokens)
  if left < 0 then redis.call('INCRBY', month, 0 - left) end
end

-- KEYS: the batch's record (<p>b:{org}:<batch>: the organization's hash tag, which the grant
-- record carries too). ARGV: grant uid, batch, input file, segments, lines, completion window
-- (ms), wrapped output key, wrapped error key. Consumes the create request's grant once (its record, settlement.lua:
-- state 'i' becomes 'b:<batch>'); the organization, key and model are the grant record's. The
-- same grant again (Envoy's retry to another replica) answers the batch it created.
-- Returns {0, batch} opened, {1, batch} opened before by this grant, {2, ''} grant unknown or
-- expired, {3, ''} grant used for something else.
local function open(keys, args)
  local uid, batch = args[1], args[2]
  if type(uid) ~= 'string' or #uid < 8 or #uid > 64 or not string.match(uid, '^[%x%-]+$') then return { 2, '' } end
  if type(batch) ~= 'string' or #batch > 100 or not string.match(batch, '^[%w_%-]+$') then return { 3, '' } end
  -- The organization of the declared record key; admin's rule for an organization id.
  local head, tail = PREFIX .. 'b:{', '}:' .. batch
  local k = keys[1]
  if type(k) ~= 'string' or string.sub(k, 1, #head) ~= head or string.sub(k, -#tail) ~= tail then return { 2, '' } end
  local tag = string.sub(k, #head + 1, -#tail - 1)
  if #tag > 64 or not string.match(tag, '^[%w][%w%._%-]*$') then return { 2, '' } end
  local grant = ROOT .. '{' .. tag .. '}:g:' .. uid
  local now = now_ms()
  local g = redis.call('HMGET', grant, 'state', 'exp', 'org', 'key', 'model', 'month')
  if not g[1] then return { 2, '' } end
  local earlier = string.match(g[1], '^b:(.+)$')
  if earlier then return { 1, earlier } end
  if g[1] ~= 'i' then return { 3, '' } end
  if now > tonumber(g[2]) + GRANT_SKEW_MS then return { 2, '' } end
  local org = g[3]
  local record = PREFIX .. 'b:{' .. org .. '}:' .. batch
  local index = PREFIX .. 'b:{' .. org .. '}:index'
  local stream = PREFIX .. 'bq:' .. org
  local active, opened = PREFIX .. 'bq:active', PREFIX .. 'bq:open'
  local window = tonumber(args[6])
  redis.call('HSET', grant, 'state', 'b:' .. batch)
  redis.call('PEXPIRE', grant, window + 86400000)
  redis.call('HSET', record, 'id', batch, 'org', org, 'key', g[4], 'model', g[5], 'input_file_id', args[3],
    'segments', args[4], 'total', args[5], 'completed', 0, 'failed', 0, 'segments_done', 0,
    'status', 'in_progress', 'created_at', now, 'in_progress_at', now, 'expires_at', now + window,
    'dek_out', args[7], 'dek_err', args[8], 'month', g[6])
  redis.call('ZADD', index, now, batch)
  redis.call('ZADD', opened, now + window, org .. '/' .. batch)
  redis.pcall('XGROUP', 'CREATE', stream, GROUP, '0', 'MKSTREAM')
  for s = 0, tonumber(args[4]) - 1 do
    redis.call('XADD', stream, '*', 'b', batch, 's', s)
  end
  -- A newcomer starts level with the least-served organization: no credit for having been idle.
  local least = redis.call('ZRANGE', active, 0, 0, 'WITHSCORES')
  redis.call('ZADD', active, 'NX', least[2] or 0, org)
  return { 0, batch }
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

-- KEYS: active. ARGV: consumer, lease (ms: an entry idle this long was left by a dead worker),
-- queue prefix (<p>bq:), record prefix (<p>b:). Picks the least-served organization with work,
-- reclaims an abandoned entry or reads a new one, skips segments of batches that stopped.
-- Returns {org, batch, segment, entry id, task} with task 'run' or 'finalize', or {} when idle.
local function claim(keys, args)
  local consumer, lease, qp, rp = args[1], args[2], args[3], args[4]
  for _ = 1, 64 do
    local orgs = redis.call('ZRANGE', keys[1], 0, 15)
    if #orgs == 0 then return {} end
    local picked = nil
    for _, org in ipairs(orgs) do
      local stream = qp .. org
      local entry = nil
      local reclaimed = redis.call('XAUTOCLAIM', stream, GROUP, consumer, lease, '0-0', 'COUNT', 1)
      if reclaimed[2] and reclaimed[2][1] then entry = reclaimed[2][1] end
      if not entry then
        local fresh = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', 1, 'STREAMS', stream, '>')
        if fresh and fresh[1] and fresh[1][2][1] then entry = fresh[1][2][1] end
      end
      if entry then
        picked = { org, stream, entry }
        break
      end
      -- Nothing new and nothing pending: every entry is acknowledged, so the stream is emptied
      -- (its group kept) and the organization leaves the active set.
      local pending = redis.call('XPENDING', stream, GROUP)
      if tonumber(pending[1]) == 0 then
        redis.call('XTRIM', stream, 'MAXLEN', 0)
        redis.call('ZREM', keys[1], org)
      end
    end
    if not picked then return {} end
    local org, stream, entry = picked[1], picked[2], picked[3]
    local id, fields = entry[1], entry[2]
    local batch, s = fields[2], fields[4]
    local record = rp .. '{' .. org .. '}:' .. batch
    local status = field(record, 'status')
    if status == 'in_progress' then
      redis.call('ZINCRBY', keys[1], 1, org)
      return { org, batch, s, id, 'run' }
    end
    redis.call('XACK', stream, GROUP, id)
    if status and skip(record, record .. ':s', s) then
      to_finalizing(record)
      return { org, batch, s, id, 'finalize' }
    end
  end
  return {}
end

-- KEYS: stream. ARGV: consumer, entry id. Resets the entry's idle time: the worker is alive.
local function heartbeat(keys, args)
  return #redis.call('XCLAIM', keys[1], GROUP, args[1], 0, args[2], 'JUSTID')
end

-- KEYS: record, lines, org record (authz's), budget (authz's). ARGV: pairs of line, tokens.
-- Checks, per call, that the batch still runs, the organization may still use the batch's
-- model, and a hard-stop budget can take the lines (reserving them in the settlement's month
-- counter, as an online request's admission does); then admits each line once. Returns one
-- code per line: 0 admitted, 1 recorded before, 2 failed before, 3 batch stopped, 4 model not
-- enabled, 5 over budget, 6 not a token count.
local function admit(keys, args)
  local out = {}
  local n = #args / 2
  local refuse = nil
  local status = field(keys[1], 'status')
  if status ~= 'in_progress' and status ~= 'cancelling' then refuse = 3 end
  if not refuse then
    local ok, models = pcall(cjson.decode, field(keys[3], 'models') or '[]')
    local model, allowed = field(keys[1], 'model'), false
    if ok and type(models) == 'table' then
      for _, m in ipairs(models) do if m == model then allowed = true end end
    end
    if not allowed then refuse = 4 end
  end
  local month = ROOT .. '{' .. (field(keys[1], 'org') or '') .. '}:b:' .. (field(keys[1], 'month') or '')
  local budget = nil
  if not refuse and field(keys[4], 'hard_stop') == '1' then budget = tonumber(field(keys[4], 'monthly_tokens') or '0') end
  local used = tonumber(redis.call('GET', month) or '0')
  local reserved = 0
  for i = 1, n do
    local line, raw = args[2 * i - 1], args[2 * i]
    local tokens = (type(raw) == 'string' and #raw <= 15 and string.match(raw, '^%d+$')) and tonumber(raw) or nil
    local state = redis.call('HGET', keys[2], line)
    if state and string.sub(state, 1, 2) == 'u:' then out[i] = 1
    elseif state and string.sub(state, 1, 2) == 'f:' then out[i] = 2
    elseif refuse then out[i] = refuse
    elseif not tokens then out[i] = 6
    elseif state == 'a:' .. raw then out[i] = 0
    elseif budget and used + tokens > budget then out[i] = 5
    else
      -- A line admitted before for other tokens (never the same text twice) releases those first.
      local before = state and tonumber(string.match(state, '^a:(%d+)$'))
      if before then reserved, used = reserved - before, used - before end
      used = used + tokens
      reserved = reserved + tokens
      redis.call('HSET', keys[2], line, 'a:' .. tokens)
      out[i] = 0
    end
  end
  if reserved ~= 0 then
    redis.call('INCRBY', month, reserved)
    redis.call('PEXPIRE', month, MONTH_TTL_MS)
  end
  return out
end

-- KEYS: record, lines, segs, queue stream. ARGV: segment, entry id, then triples of line,
-- outcome ('u' or 'f'), tokens or problem code. Commits one segment once: each admitted line's
-- usage (kind batch, for exactly its admitted tokens, billed to the batch record's organization,
-- key and model, at Redis's clock) or each failed line, the counts, and the queue
-- acknowledgement, all together. Returns {recorded now, failed now, 1 when this ended the
-- batch's work}.
local function commit(keys, args)
  local s, entry = args[1], args[2]
  local org, key_id, model, batch = field(keys[1], 'org'), field(keys[1], 'key'), field(keys[1], 'model'), field(keys[1], 'id')
  if not batch then return { 0, 0, 0 } end
  local time = now_ms()
  local daily = ROOT .. '{' .. org .. '}:usage:daily:' .. utc_day(time)
  local recorded, failed = 0, 0
  for i = 3, #args, 3 do
    local line, outcome, value = args[i], args[i + 1], args[i + 2]
    local state = redis.call('HGET', keys[2], line)
    if outcome == 'u' and state == 'a:' .. value then
      redis.call('HSET', keys[2], line, 'u:' .. value)
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
      if back then give_back_month(keys[1], back) end
      redis.call('HSET', keys[2], line, 'f:' .. value)
      failed = failed + 1
    end
  end
  if recorded > 0 then redis.call('HINCRBY', keys[1], 'completed', recorded) end
  if failed > 0 then redis.call('HINCRBY', keys[1], 'failed', failed) end
  redis.call('XACK', keys[4], GROUP, entry)
  local ended = 0
  if redis.call('HSETNX', keys[3], s, 'done') == 1 then
    local done = redis.call('HINCRBY', keys[1], 'segments_done', 1)
    if done >= tonumber(field(keys[1], 'segments')) then
      to_finalizing(keys[1])
      ended = 1
    end
  end
  return { recorded, failed, ended }
end

-- KEYS: record. Stops a running batch: 'cancelling' until its segments are drained. Returns the status.
local function cancel(keys)
  local status = field(keys[1], 'status')
  if status == 'in_progress' or status == 'validating' then
    redis.call('HSET', keys[1], 'status', 'cancelling', 'cancelling_at', now_ms())
    return 'cancelling'
  end
  return status or ''
end

-- KEYS: record. Ends a running batch whose completion window has passed. Returns the status.
local function expire(keys)
  local status = field(keys[1], 'status')
  if status == 'in_progress' and now_ms() >= tonumber(field(keys[1], 'expires_at')) then
    redis.call('HSET', keys[1], 'status', 'expired', 'expired_at', now_ms())
    return 'expired'
  end
  return status or ''
end

-- KEYS: record, lines, segs, open. ARGV: org, output file id, error file id, keep (ms: how long
-- the record outlives its end). Ends a batch whose work is over: admitted lines never recorded
-- are refunded, the final status and file ids set, the keys given their retention. Idempotent.
local function finish(keys, args)
  local status = field(keys[1], 'status')
  if not status then return '' end
  local final = ({ finalizing = 'completed', cancelling = 'cancelled', expired = 'expired', failed = 'failed' })[status]
  if not final then return status end
  local lines = redis.call('HGETALL', keys[2])
  for i = 1, #lines, 2 do
    local tokens = string.match(lines[i + 1], '^a:(%d+)$')
    if tokens then
      redis.call('HSET', keys[2], lines[i], 'r:' .. tokens)
      give_back_month(keys[1], tonumber(tokens))
    end
  end
  local now = now_ms()
  redis.call('HSET', keys[1], 'status', final, 'output_file_id', args[2], 'error_file_id', args[3])
  if final == 'completed' then redis.call('HSET', keys[1], 'completed_at', now) end
  if final == 'cancelled' then redis.call('HSET', keys[1], 'cancelled_at', now) end
  if final == 'failed' then redis.call('HSETNX', keys[1], 'failed_at', now) end
  redis.call('ZREM', keys[4], args[1] .. '/' .. field(keys[1], 'id'))
  for k = 1, 3 do redis.call('PEXPIRE', keys[k], tonumber(args[4])) end
  return final
end

-- KEYS: record. ARGV: error code. Fails a running batch (its input can no longer be read).
local function fail(keys, args)
  local status = field(keys[1], 'status')
  if status == 'in_progress' or status == 'cancelling' then
    redis.call('HSET', keys[1], 'status', 'failed', 'failed_at', now_ms(), 'error', args[1])
  end
  return field(keys[1], 'status') or ''
end

-- KEYS: record. The record as a flat list ({} when none).
local function get(keys)
  return redis.call('HGETALL', keys[1])
end

-- KEYS: index. ARGV: before (ms, exclusive; '+inf' for the newest), limit. Newest first.
local function list(keys, args)
  local max = args[1] == '+inf' and '+inf' or '(' .. args[1]
  return redis.call('ZRANGE', keys[1], max, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, tonumber(args[2]), 'WITHSCORES')
end

-- KEYS: open. ARGV: limit. Batches not yet ended, soonest expiry first ('org/batch', expiry).
local function unfinished(keys, args)
  return redis.call('ZRANGE', keys[1], 0, tonumber(args[1]) - 1, 'WITHSCORES')
end

redis.register_function('ctg_batch_open___CTG_TAG__', open)
redis.register_function('ctg_batch_claim___CTG_TAG__', claim)
redis.register_function('ctg_batch_heartbeat___CTG_TAG__', heartbeat)
redis.register_function('ctg_batch_admit___CTG_TAG__', admit)
redis.register_function('ctg_batch_commit___CTG_TAG__', commit)
redis.register_function('ctg_batch_cancel___CTG_TAG__', cancel)
redis.register_function('ctg_batch_expire___CTG_TAG__', expire)
redis.register_function('ctg_batch_finish___CTG_TAG__', finish)
redis.register_function('ctg_batch_fail___CTG_TAG__', fail)
redis.register_function { function_name = 'ctg_batch_get___CTG_TAG__', callback = get, flags = { 'no-writes' } }
redis.register_function { function_name = 'ctg_batch_list___CTG_TAG__', callback = list, flags = { 'no-writes' } }
redis.register_function { function_name = 'ctg_batch_unfinished___CTG_TAG__', callback = unfinished, flags = { 'no-writes' } }
