-- Gives back one admitted request's tokens, atomically: the arithmetic of refundTokens in
-- authz/src/policy/limits.ts. TAT moves back by cost·period/tpm, never before now.
-- KEYS[1] token bucket
-- ARGV: now, tpm, cost, period
local now = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local period = tonumber(ARGV[4])
if tpm <= 0 then return 0 end
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ms, frac = string.match(raw, '^(%d+):(%d+)$')
if not ms then return 0 end
ms, frac = tonumber(ms), tonumber(frac)
local back = cost * period
ms = ms - math.floor(back / tpm)
frac = frac - (back % tpm)
if frac < 0 then
  frac = frac + tpm
  ms = ms - 1
end
if ms < now or (ms == now and frac == 0) then
  redis.call('DEL', KEYS[1])
  return 1
end
local ttl = ms - now
if frac > 0 then ttl = ttl + 1 end
redis.call('SET', KEYS[1], string.format('%.0f:%.0f', ms, frac), 'PX', math.max(1, ttl))
return 1
