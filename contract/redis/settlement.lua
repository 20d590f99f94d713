#!lua name=ctg_settlement___CTG_TAG__
-- Every request's settlement, one library: authz's Check (ctg_check: request rate, token room,
-- hard-stop budget, and the grant record) and the embedder's admit, record, refund and void of
-- that grant. Each function is one atomic round trip. docs/settlement.md explains the design.
--
-- The secret namespace. Every key these functions touch lives under ROOT = <prefix><NS>:, where
-- NS is 128 random bits that authz created and renders into this source before FUNCTION LOAD
-- (settlement-keys.ts, renderSettlementLibrary). The embedder's Redis user may run these
-- commands only on ROOT's keys, and names one key only: the routing key <prefix>route:{<org>}
-- (settlementRouteKey), which the functions read the organization from and never touch. It
-- never learns NS, so it cannot name a key to write raw. What it can do is call the functions,
-- and they decide from the grant record authz wrote at Check, never from what the embedder says.
-- Every key of one call carries the organization's hash tag {<org>}, the routing key's too, so
-- in a Redis Cluster the call runs on the primary that holds them all (T = ROOT {<org>}:):
--   T g:<uid>                    grant record (hash): org, key, model, tpm, method, path (no query), cap
--                                (hard-stop budget or -1), month, exp, state, sid, day
--   T rl:req:<model>             request bucket (GCRA)    T rl:tok:<model>  token bucket
--   T b:<YYYY-MM>                tokens reserved and used this month (the hard stop's counter)
--   T usage                      the organization's usage stream (contract/usage-record.ts's USAGE_FIELDS)
--   T usage:daily:<day>          daily counters
--   <prefix>budget:{<org>}       the budget (admin's; read by the check only)
-- A grant's state: 'i' issued, then 'a:<n>' admitted (charged), 'u:<n>' recorded, 'r:<n>'
-- refunded, 'v:<n>' voided (recorded, then taken back: the replicas did not confirm it). Each
-- step happens once, so a grant serves one request.
--
-- GCRA arithmetic is authz/src/policy/limits.ts's, line for line (integer ms, state "ms:frac"
-- meaning TAT = ms + frac / limit); test/authz/limits-redis.test.ts compares them. The caller's
-- clock (`now`) drives the buckets; Redis's own clock (TIME) is the fence against a command that
-- arrives late. Identifiers and counts only, never text.

local ROOT = '__CTG_ROOT__'
local PREFIX = '__CTG_PREFIX__'
local SKEW_MS = 5000
local MARK_TTL_MS = 86400000
local MONTH_TTL_MS = 40 * 86400000
local DAY_MS = 86400000
-- How long after its record the embedder may still void a grant (its WAIT for the replicas).
local VOID_WINDOW_MS = 5000
-- The gateway's request-id rule (contract/request-id.ts; test/contract/request-id.unit.test.ts ties this copy to it).
local REQUEST_ID = '^[%w%._:/%+=@%-]+$'

local function redis_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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

-- The start of every key of `org`: its hash tag.
local function tagged(org)
  return ROOT .. '{' .. org .. '}:'
end

-- A grant uid as authz makes them (a UUID): hex and dashes only, so it cannot steer a key name.
local function grant_key(keys, uid)
  local org = org_of(keys)
  if not org or type(uid) ~= 'string' or #uid < 8 or #uid > 64 or not string.match(uid, '^[%x%-]+$') then return nil end
  return tagged(org) .. 'g:' .. uid
end

-- A whole, non-negative count given as decimal digits (no sign, exponent or fraction).
local function count(raw)
  if type(raw) ~= 'string' or #raw > 15 or not string.match(raw, '^%d+$') then return nil end
  return tonumber(raw)
end

-- Days since the epoch to a UTC date (Howard Hinnant's civil_from_days).
local function civil(ms)
  local z = math.floor(ms / DAY_MS) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function utc_day(ms)
  local y, m, d = civil(ms)
  return string.format('%04d-%02d-%02d', y, m, d)
end

local function utc_month(ms)
  local y, m = civil(ms)
  return string.format('%04d-%02d', y, m)
end

-- Milliseconds from `ms` to the start of the next UTC month.
local function until_next_month(ms)
  local y, m = civil(ms)
  m = m + 1
  if m > 12 then m, y = 1, y + 1 end
  -- Days from the epoch to y-m-01 (days_from_civil).
  local yy = m <= 2 and y - 1 or y
  local era = math.floor(yy / 400)
  local yoe = yy - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = math.floor((153 * mp + 2) / 5)
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return (era * 146097 + doe - 719468) * DAY_MS - ms
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

local function units_left(tat, now, limit, period)
  local n = math.floor(((now + period - tat.ms) * limit - tat.frac) / period)
  if n < 0 then return 0 end
  return n
end

local function ms_until(tat, now)
  local d = tat.ms - now
  if tat.frac > 0 then d = d + 1 end
  if d < 0 then return 0 end
  return d
end

local function store_tat(key, tat, now)
  if tat.ms < now or (tat.ms == now and tat.frac == 0) then
    -- An empty bucket; expire it at once (the embedder's Redis user may not DEL).
    redis.call('SET', key, string.format('%.0f:0', now), 'PX', 1)
    return
  end
  redis.call('SET', key, string.format('%.0f:%.0f', tat.ms, tat.frac), 'PX', math.max(1, ms_until(tat, now)))
end

-- One GCRA step of `cost` on a bucket of `limit` per `period`; limits.ts's gcra().
-- Returns allowed, next state, remaining, resetMs, retryAfterMs.
local function gcra(base, now, limit, period, cost)
  if limit <= 0 then return false, { ms = now, frac = 0 }, 0, 0, period end
  local num = base.frac + cost * period
  local nxt = { ms = base.ms + math.floor(num / limit), frac = num % limit }
  local excess = (nxt.ms - period - now) * limit + nxt.frac
  if excess <= 0 then return true, nxt, units_left(nxt, now, limit, period), ms_until(nxt, now), 0 end
  local retry = nxt.ms - period - now
  if nxt.frac > 0 then retry = retry + 1 end
  return false, base, units_left(base, now, limit, period), ms_until(base, now), retry
end

local function buckets(org, model)
  return tagged(org) .. 'rl:req:' .. model, tagged(org) .. 'rl:tok:' .. model
end

local function month_key(org, month)
  return tagged(org) .. 'b:' .. month
end

-- Gives `cost` tokens back to the grant's token bucket and its month's budget counter.
local function give_back(rec, cost, now, period)
  local tpm = tonumber(rec.tpm)
  local _, tok = buckets(rec.org, rec.model)
  local raw = tpm > 0 and redis.call('GET', tok)
  local ms, frac = nil, nil
  if raw then ms, frac = string.match(raw, '^(%d+):(%d+)$') end
  if ms then
    ms, frac = tonumber(ms), tonumber(frac)
    local back = cost * period
    ms = ms - math.floor(back / tpm)
    frac = frac - (back % tpm)
    if frac < 0 then
      frac = frac + tpm
      ms = ms - 1
    end
    store_tat(tok, { ms = ms, frac = frac }, now)
  end
  local month = month_key(rec.org, rec.month)
  local left = redis.call('INCRBY', month, 0 - cost)
  if left < 0 then redis.call('INCRBY', month, 0 - left) end
end

local function read_grant(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return nil end
  local rec = {}
  for i = 1, #raw, 2 do rec[raw[i]] = raw[i + 1] end
  return rec
end

-- authz's Check (authz only: it reads the budget hash under <prefix>, outside ROOT, which the
-- embedder's user may not touch). KEYS: the organization's routing key. ARGV: uid, key id, model
-- (the buckets'), granted model ('' when not enabled), method, path, now, rpm, tpm, period, grant
-- expiry (ms). The hard-stop
-- budget, limits.ts's evaluateCheck (token room, then one request), then the grant record. Returns {allowed, reason (0 none, 1 requests, 2 tokens,
-- 3 budget), requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs, budget tokens,
-- budget used}.
local function check(keys, args)
  local org = org_of(keys)
  local uid, key_id, model, granted, method, path = args[1], args[2], args[3], args[4], args[5], args[6]
  local now, rpm, tpm, period, exp = tonumber(args[7]), tonumber(args[8]), tonumber(args[9]), tonumber(args[10]), tonumber(args[11])
  local grant = grant_key(keys, uid)
  if not grant then return redis.error_reply('ERR grant uid or organization') end
  local budget = redis.call('HMGET', PREFIX .. 'budget:{' .. org .. '}', 'monthly_tokens', 'hard_stop')
  local month = utc_month(now)
  local cap = -1
  if budget[1] and budget[2] == '1' then
    cap = tonumber(budget[1]) or 0
    local used = tonumber(redis.call('GET', month_key(org, month)) or '0')
    if used >= cap then return { 0, 3, 0, 0, 0, until_next_month(now), cap, used } end
  end
  local req, tok = buckets(org, model)
  local tok_ok, _, tok_left, _, tok_retry = gcra(load_tat(tok, now), now, tpm, period, 0)
  local cost = 0
  if tok_ok then cost = 1 end
  local req_ok, req_tat, req_left, req_reset, req_retry = gcra(load_tat(req, now), now, rpm, period, cost)
  if not tok_ok then return { 0, 2, req_left, req_reset, tok_left, tok_retry, 0, 0 } end
  if not req_ok then return { 0, 1, req_left, req_reset, tok_left, req_retry, 0, 0 } end
  redis.call('SET', req, string.format('%.0f:%.0f', req_tat.ms, req_tat.frac), 'PX', math.max(1, req_reset))
  redis.call('HSET', grant, 'org', org, 'key', key_id, 'model', granted, 'tpm', tpm, 'method', method, 'path', path,
    'cap', cap, 'month', month, 'exp', exp, 'state', 'i')
  redis.call('PEXPIRE', grant, math.max(exp - now, 0) + SKEW_MS)
  return { 1, 0, req_left, req_reset, tok_left, 0, 0, 0 }
end

-- The embedder's admission. ARGV: uid, tokens, now, period. Charges the grant's organization's
-- token bucket (the grant's tpm) and, under a hard stop, reserves the tokens in the month's
-- budget counter, all or nothing, once per grant. Returns {outcome, tokensRemaining,
-- retryAfterMs, redisNow, budget tokens, budget used}; outcome 0 admitted, 1 over the token
-- limit, 2 larger than the whole limit, 3 grant unknown or expired, 4 grant already used,
-- 5 not a token count, 6 over the hard-stop budget.
local function admit(keys, args)
  local grant = grant_key(keys, args[1])
  local cost, now, period = count(args[2]), tonumber(args[3]), tonumber(args[4])
  local fence = redis_now()
  if not grant then return { 3, 0, 0, fence, 0, 0 } end
  if not cost or not now or not period or period <= 0 then return { 5, 0, 0, fence, 0, 0 } end
  local rec = read_grant(grant)
  if not rec or fence > tonumber(rec.exp) + SKEW_MS then return { 3, 0, 0, fence, 0, 0 } end
  if rec.state ~= 'i' then return { 4, 0, 0, fence, 0, 0 } end
  if rec.model == '' then return { 3, 0, 0, fence, 0, 0 } end
  local tpm = tonumber(rec.tpm)
  if tpm <= 0 or cost > tpm then return { 2, 0, 0, fence, 0, 0 } end
  local _, tok = buckets(rec.org, rec.model)
  local ok, nxt, left, _, retry = gcra(load_tat(tok, now), now, tpm, period, cost)
  if not ok then return { 1, left, retry, fence, 0, 0 } end
  local month = month_key(rec.org, rec.month)
  local cap = tonumber(rec.cap)
  local used = tonumber(redis.call('GET', month) or '0')
  if cap >= 0 and used + cost > cap then return { 6, left, until_next_month(now), fence, cap, used } end
  store_tat(tok, nxt, now)
  redis.call('INCRBY', month, cost)
  redis.call('PEXPIRE', month, MONTH_TTL_MS)
  redis.call('HSET', grant, 'state', 'a:' .. cost)
  redis.call('PEXPIRE', grant, math.max(tonumber(rec.exp) - fence, 0) + MARK_TTL_MS)
  return { 0, units_left(nxt, now, tpm, period), 0, fence, 0, 0 }
end

-- ARGV: uid, tokens, request id, deadline (ms, Redis's clock). Writes the grant's usage (its
-- organization, key and model; Redis's clock as the time) and the daily counters, once, for
-- exactly the admitted tokens. Returns 1 recorded now, 0 recorded before, -1 past the deadline
-- (nothing written, ever: the embedder answers 503), -2 not admitted for these tokens.
local function record(keys, args)
  local grant = grant_key(keys, args[1])
  local tokens, request_id, deadline = args[2], args[3], tonumber(args[4])
  if not grant or not count(tokens) or not deadline then return -2 end
  if type(request_id) ~= 'string' or #request_id > 200 or not string.match(request_id, REQUEST_ID) then return -2 end
  local rec = read_grant(grant)
  if not rec then return -2 end
  if rec.state == 'u:' .. tokens then return 0 end
  if rec.state ~= 'a:' .. tokens then return -2 end
  local time = redis_now()
  if time > deadline then return -1 end
  local day = utc_day(time)
  local sid = redis.call('XADD', tagged(rec.org) .. 'usage', '*', 'org', rec.org, 'key', rec.key, 'model', rec.model,
    'request_id', request_id, 'tokens', tokens, 'ts', time, 'kind', 'online', 'batch', '')
  redis.call('HSET', grant, 'state', 'u:' .. tokens, 'sid', sid, 'day', day, 'at', time)
  local daily = tagged(rec.org) .. 'usage:daily:' .. day
  local n = tonumber(tokens)
  redis.call('HINCRBY', daily, 'requests', 1)
  redis.call('HINCRBY', daily, 'tokens', n)
  redis.call('HINCRBY', daily, 'requests:' .. rec.model, 1)
  redis.call('HINCRBY', daily, 'tokens:' .. rec.model, n)
  return 1
end

-- ARGV: uid, now, period. Takes back a usage recorded within VOID_WINDOW_MS whose replication
-- the embedder could not confirm (it answers 503, never 200): the stream entry is deleted, the
-- daily counters reversed, tokens and budget given back. Returns 1 voided, 0 nothing to void.
local function void(keys, args)
  local grant = grant_key(keys, args[1])
  local now, period = tonumber(args[2]), tonumber(args[3])
  if not grant or not now or not period or period <= 0 then return 0 end
  local rec = read_grant(grant)
  local cost = rec and tonumber(string.match(rec.state, '^u:(%d+)$'))
  if not cost or redis_now() > tonumber(rec.at) + VOID_WINDOW_MS then return 0 end
  redis.call('HSET', grant, 'state', 'v:' .. cost)
  redis.call('XDEL', tagged(rec.org) .. 'usage', rec.sid)
  local daily = tagged(rec.org) .. 'usage:daily:' .. rec.day
  redis.call('HINCRBY', daily, 'requests', -1)
  redis.call('HINCRBY', daily, 'tokens', 0 - cost)
  redis.call('HINCRBY', daily, 'requests:' .. rec.model, -1)
  redis.call('HINCRBY', daily, 'tokens:' .. rec.model, 0 - cost)
  give_back(rec, cost, now, period)
  return 1
end

-- ARGV: uid, now, period. The embedder will not answer this grant's request with a 200: gives
-- back what it was charged. An admitted, unrecorded grant's tokens and budget go back (TAT moves
-- back by tokens·period/tpm, never before now); a record the embedder did not see land (its
-- reply lost or held past the wait, the grant's state unreadable) is voided as above, within
-- VOID_WINDOW_MS. Returns 1 refunded or voided, 0 nothing to give back.
local function refund(keys, args)
  local grant = grant_key(keys, args[1])
  local now, period = tonumber(args[2]), tonumber(args[3])
  if not grant or not now or not period or period <= 0 then return 0 end
  local rec = read_grant(grant)
  if rec and string.match(rec.state, '^u:%d+$') then return void(keys, args) end
  local cost = rec and tonumber(string.match(rec.state, '^a:(%d+)$'))
  if not cost then return 0 end
  redis.call('HSET', grant, 'state', 'r:' .. cost)
  give_back(rec, cost, now, period)
  return 1
end

-- ARGV: uid. The grant's state ('' when none): how a settlement whose reply was lost ended.
local function status(keys, args)
  local grant = grant_key(keys, args[1])
  if not grant then return '' end
  return redis.call('HGET', grant, 'state') or ''
end

redis.register_function('ctg_check___CTG_TAG__', check)
redis.register_function('ctg_admit___CTG_TAG__', admit)
redis.register_function('ctg_record___CTG_TAG__', record)
redis.register_function('ctg_refund___CTG_TAG__', refund)
redis.register_function('ctg_void___CTG_TAG__', void)
redis.register_function { function_name = 'ctg_status___CTG_TAG__', callback = status, flags = { 'no-writes' } }
