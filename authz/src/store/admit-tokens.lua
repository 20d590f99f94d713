-- Admits one request's tokens, atomically: the arithmetic of evaluateAdmission in
-- authz/src/policy/limits.ts (GCRA with cost = tokens), line for line. All or nothing: the
-- charge is stored only when the whole of it fits. Times are integer ms; a bucket's state is
-- "ms:frac" meaning TAT = ms + frac / tpm.
-- KEYS[1] token bucket
-- ARGV: now, tpm, cost, period
-- Returns {outcome (0 admitted, 1 over limit, 2 too large), tokensRemaining, retryAfterMs}
local now = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local period = tonumber(ARGV[4])

if tpm <= 0 or cost > tpm then return { 2, 0, 0 } end

local base = { ms = now, frac = 0 }
local raw = redis.call('GET', KEYS[1])
if raw then
  local ms, frac = string.match(raw, '^(%d+):(%d+)$')
  if ms then
    ms, frac = tonumber(ms), tonumber(frac)
    if ms > now or (ms == now and frac > 0) then base = { ms = ms, frac = frac } end
  end
end

local function units_left(tat)
  local n = math.floor(((now + period - tat.ms) * tpm - tat.frac) / period)
  if n < 0 then return 0 end
  return n
end

local num = base.frac + cost * period
local nxt = { ms = base.ms + math.floor(num / tpm), frac = num % tpm }
local excess = (nxt.ms - period - now) * tpm + nxt.frac
if excess > 0 then
  local retry = nxt.ms - period - now
  if nxt.frac > 0 then retry = retry + 1 end
  return { 1, units_left(base), retry }
end
local ttl = nxt.ms - now
if nxt.frac > 0 then ttl = ttl + 1 end
redis.call('SET', KEYS[1], string.format('%.0f:%.0f', nxt.ms, nxt.frac), 'PX', math.max(1, ttl))
return { 0, units_left(nxt), 0 }
