-- One Check's rate limit, atomically, in one round trip: the arithmetic of
-- authz/src/policy/limits.ts (gcra, evaluateCheck), line for line. Times are integer ms; a
-- bucket's state is "ms:frac" meaning TAT = ms + frac / limit.
-- KEYS[1] request bucket, KEYS[2] token bucket
-- ARGV: now, rpm, tpm, period
-- Returns {allowed, reason (0 none, 1 requests, 2 tokens), requestsRemaining, requestsResetMs,
--          tokensRemaining, retryAfterMs}
local now = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
local period = tonumber(ARGV[4])

local function load(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  local ms, frac = string.match(raw, '^(%d+):(%d+)$')
  if not ms then return nil end
  return { ms = tonumber(ms), frac = tonumber(frac) }
end

local function units_left(tat, limit)
  local n = math.floor(((now + period - tat.ms) * limit - tat.frac) / period)
  if n < 0 then return 0 end
  return n
end

local function ms_until(tat)
  local d = tat.ms - now
  if tat.frac > 0 then d = d + 1 end
  if d < 0 then return 0 end
  return d
end

-- returns allowed, tat, remaining, resetMs, retryAfterMs
local function gcra(state, limit, cost)
  if limit <= 0 then return false, { ms = now, frac = 0 }, 0, 0, period end
  local base = { ms = now, frac = 0 }
  if state and (state.ms > now or (state.ms == now and state.frac > 0)) then base = state end
  local num = base.frac + cost * period
  local nxt = { ms = base.ms + math.floor(num / limit), frac = num % limit }
  local excess = (nxt.ms - period - now) * limit + nxt.frac
  if excess <= 0 then
    return true, nxt, units_left(nxt, limit), ms_until(nxt), 0
  end
  local retry = nxt.ms - period - now
  if nxt.frac > 0 then retry = retry + 1 end
  return false, base, units_left(base, limit), ms_until(base), retry
end

local tok_ok, _, tok_left, _, tok_retry = gcra(load(KEYS[2]), tpm, 0)
local cost = 0
if tok_ok then cost = 1 end
local req_ok, req_tat, req_left, req_reset, req_retry = gcra(load(KEYS[1]), rpm, cost)

if not tok_ok then
  return { 0, 2, req_left, req_reset, tok_left, tok_retry }
end
if not req_ok then
  return { 0, 1, req_left, req_reset, tok_left, req_retry }
end
redis.call('SET', KEYS[1], string.format('%.0f:%.0f', req_tat.ms, req_tat.frac), 'PX', math.max(1, req_reset))
return { 1, 0, req_left, req_reset, tok_left, 0 }
