-- Records one successful request's usage, atomically: appends it to the usage stream, adds it
-- to the organization's daily counters, and debits the token bucket (the arithmetic of
-- debitTokens in authz/src/policy/limits.ts). Identifiers and counts only, never text.
-- KEYS[1] usage stream, KEYS[2] daily counters hash, KEYS[3] token bucket, KEYS[4] org hash
-- ARGV: org, keyId, model, requestId, tokens, now, defaultTpm, period
local org, key_id, model, request_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local tokens = tonumber(ARGV[5])
local now = tonumber(ARGV[6])
local period = tonumber(ARGV[8])

redis.call('XADD', KEYS[1], '*', 'org', org, 'key', key_id, 'model', model,
  'request_id', request_id, 'tokens', tokens, 'ts', string.format('%.0f', now))
redis.call('HINCRBY', KEYS[2], 'requests', 1)
redis.call('HINCRBY', KEYS[2], 'tokens', tokens)
redis.call('HINCRBY', KEYS[2], 'requests:' .. model, 1)
redis.call('HINCRBY', KEYS[2], 'tokens:' .. model, tokens)

local tpm = tonumber(redis.call('HGET', KEYS[4], 'tpm') or '')
if not tpm then tpm = tonumber(ARGV[7]) end
if tpm <= 0 or tokens <= 0 then return 1 end

local base = { ms = now, frac = 0 }
local raw = redis.call('GET', KEYS[3])
if raw then
  local ms, frac = string.match(raw, '^(%d+):(%d+)$')
  if ms then
    ms, frac = tonumber(ms), tonumber(frac)
    if ms > now or (ms == now and frac > 0) then base = { ms = ms, frac = frac } end
  end
end
local num = base.frac + tokens * period
local nms, nfrac = base.ms + math.floor(num / tpm), num % tpm
local ttl = nms - now
if nfrac > 0 then ttl = ttl + 1 end
redis.call('SET', KEYS[3], string.format('%.0f:%.0f', nms, nfrac), 'PX', math.max(1, ttl))
return 1
