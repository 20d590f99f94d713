#!lua name=ctg_settlement
-- One request's settlement, shared by authz (which loads this library) and the embedder (which
-- calls it, as a Redis user allowed nothing but FCALL on these keys). Each function is one atomic
-- round trip. A request's state lives in its settle key, named by the grant's uid:
--   a:<tokens>  admitted (charged)     u:<tokens>  recorded (usage written)     r:<tokens>  refunded
-- so a grant is charged once, recorded once and only if charged, and never both refunded and
-- recorded. The caller's clock (`now`) drives the buckets, so the arithmetic is testable against
-- authz/src/policy/limits.ts (GCRA, line for line: integer ms, state "ms:frac" meaning
-- TAT = ms + frac / tpm); Redis's own clock (TIME) is the fence against a command that arrives
-- late: past the grant's expiry, or past the deadline the embedder waits for a record's answer.
-- Identifiers and counts only, never text.

local SKEW_MS = 5000
local MARK_TTL_MS = 86400000

local function redis_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function load_tat(key, now)
  local raw = redis.call('GET', key)
  if raw then
    local ms, frac = string.match(raw, '^(%d+):(%d+)$')
    if ms then
      ms, frac = tonumber(ms), tonumber(frac)
      if ms > now or (ms == now and frac > 0) then return { ms = ms, frac = frac } end
    end
  end
  return { ms = now, frac = 0 }
end

local function units_left(tat, now, tpm, period)
  local n = math.floor(((now + period - tat.ms) * tpm - tat.frac) / period)
  if n < 0 then return 0 end
  return n
end

local function store_tat(key, tat, now)
  if tat.ms < now or (tat.ms == now and tat.frac == 0) then
    -- An empty bucket; expire it at once (the embedder's Redis user may not DEL).
    redis.call('SET', key, string.format('%.0f:0', now), 'PX', 1)
    return
  end
  local ttl = tat.ms - now
  if tat.frac > 0 then ttl = ttl + 1 end
  redis.call('SET', key, string.format('%.0f:%.0f', tat.ms, tat.frac), 'PX', math.max(1, ttl))
end

-- KEYS: token bucket, settle key. ARGV: now, tpm, tokens, period, grant expiry (ms).
-- Returns {outcome, tokensRemaining, retryAfterMs, redisNow}; outcome 0 admitted (or admitted or
-- recorded before with the same tokens: a retry of the same request, charged once), 1 over the
-- limit, 2 larger than the whole limit, 3 grant expired, 4 grant already used for other tokens.
-- A refunded request's retry is charged again.
local function admit(keys, args)
  local now, tpm, cost, period, exp = tonumber(args[1]), tonumber(args[2]), tonumber(args[3]), tonumber(args[4]), tonumber(args[5])
  local fence = redis_now()
  if fence > exp + SKEW_MS then return { 3, 0, 0, fence } end
  local state = redis.call('GET', keys[2])
  if state == 'a:' .. cost or state == 'u:' .. cost then
    return { 0, units_left(load_tat(keys[1], now), now, tpm, period), 0, fence }
  end
  if state and state ~= 'r:' .. cost then return { 4, 0, 0, fence } end
  if tpm <= 0 or cost > tpm then return { 2, 0, 0, fence } end
  local base = load_tat(keys[1], now)
  local num = base.frac + cost * period
  local nxt = { ms = base.ms + math.floor(num / tpm), frac = num % tpm }
  local excess = (nxt.ms - period - now) * tpm + nxt.frac
  if excess > 0 then
    local retry = nxt.ms - period - now
    if nxt.frac > 0 then retry = retry + 1 end
    return { 1, units_left(base, now, tpm, period), retry, fence }
  end
  store_tat(keys[1], nxt, now)
  redis.call('SET', keys[2], 'a:' .. cost, 'PX', math.max(exp - fence, 0) + MARK_TTL_MS)
  return { 0, units_left(nxt, now, tpm, period), 0, fence }
end

-- KEYS: settle key, usage stream, daily counters hash. ARGV: org, key id, model, request id,
-- tokens, time (ms), deadline (ms, Redis's clock). Returns 1 recorded now, 0 recorded before,
-- -1 past the deadline (nothing written, ever: the embedder answers 503), -2 not admitted for
-- these tokens (refunded, never charged, or other tokens).
local function record(keys, args)
  local org, key_id, model, request_id, tokens, time, deadline = args[1], args[2], args[3], args[4], args[5], args[6], tonumber(args[7])
  local state = redis.call('GET', keys[1])
  if state == 'u:' .. tokens then return 0 end
  if state ~= 'a:' .. tokens then return -2 end
  if redis_now() > deadline then return -1 end
  redis.call('SET', keys[1], 'u:' .. tokens, 'KEEPTTL')
  redis.call('XADD', keys[2], '*', 'org', org, 'key', key_id, 'model', model,
    'request_id', request_id, 'tokens', tokens, 'ts', time)
  local n = tonumber(tokens)
  redis.call('HINCRBY', keys[3], 'requests', 1)
  redis.call('HINCRBY', keys[3], 'tokens', n)
  redis.call('HINCRBY', keys[3], 'requests:' .. model, 1)
  redis.call('HINCRBY', keys[3], 'tokens:' .. model, n)
  return 1
end

-- KEYS: token bucket, settle key. ARGV: now, tpm, period. Gives an admitted, unrecorded
-- request's tokens back (TAT moves back by tokens·period/tpm, never before now). Returns 1 when
-- refunded, 0 when there was nothing to refund (never admitted, recorded, refunded before).
local function refund(keys, args)
  local now, tpm, period = tonumber(args[1]), tonumber(args[2]), tonumber(args[3])
  local state = redis.call('GET', keys[2])
  local cost = state and tonumber(string.match(state, '^a:(%d+)$'))
  if not cost then return 0 end
  redis.call('SET', keys[2], 'r:' .. cost, 'KEEPTTL')
  if tpm <= 0 then return 1 end
  local raw = redis.call('GET', keys[1])
  if not raw then return 1 end
  local ms, frac = string.match(raw, '^(%d+):(%d+)$')
  if not ms then return 1 end
  ms, frac = tonumber(ms), tonumber(frac)
  local back = cost * period
  ms = ms - math.floor(back / tpm)
  frac = frac - (back % tpm)
  if frac < 0 then
    frac = frac + tpm
    ms = ms - 1
  end
  store_tat(keys[1], { ms = ms, frac = frac }, now)
  return 1
end

-- KEYS: settle key. Returns the state ('' when none): how a settlement whose reply was lost ended.
local function status(keys)
  return redis.call('GET', keys[1]) or ''
end

redis.register_function('ctg_admit', admit)
redis.register_function('ctg_record', record)
redis.register_function('ctg_refund', refund)
redis.register_function { function_name = 'ctg_settle_status', callback = status, flags = { 'no-writes' } }
