-- Moves one key of the settlement's layout before organizations had a hash tag (issue 28) to its
-- tagged name, atomically, so authz replicas migrating at once never count anything twice.
-- One Redis only (the old layout never ran on a cluster). Identifiers and counts only.
-- KEYS[1] old key, KEYS[2] new key. ARGV[1] kind: 'hash' (any key moved whole, a stream with its
-- consumer groups too: renamed, unless one was written under the new name since, which stays),
-- 'set' (merged into the new one), 'zset' (merged, the lower score kept), 'batch-open' (the
-- Batch API's 'org/batch' by expiry: each batch into ARGV[2] {org}:bopen and its organization
-- into the work index's open set KEYS[2], with a version), 'batch-active' (organizations by
-- segments served into the work index KEYS[2], with a version; ARGV[3] the index's key start), 'month' (a counter: added to the new one),
-- 'daily' (a hash of counters: added field by field), 'usage' (the one stream of every
-- organization: up to ARGV[2] entries moved to their organization's stream under ARGV[3], the
-- namespace root, keeping their ids while that stream has none later). Returns what is left.
local old, new, kind = KEYS[1], KEYS[2], ARGV[1]
if kind == 'hash' then
  if redis.call('EXISTS', new) == 0 and redis.call('EXISTS', old) == 1 then
    redis.call('RENAME', old, new)
  else
    redis.call('DEL', old)
  end
  return 0
end
if kind == 'zset' then
  if redis.call('EXISTS', old) == 1 then redis.call('ZUNIONSTORE', new, 2, new, old, 'AGGREGATE', 'MIN') end
  redis.call('DEL', old)
  return 0
end
if kind == 'batch-open' or kind == 'batch-active' then
  local index = ARGV[3]
  local entries = redis.call('ZRANGE', old, 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    local member, score = entries[i], entries[i + 1]
    local org = member
    if kind == 'batch-open' then
      local batch
      org, batch = string.match(member, '^([^/]+)/(.+)$')
      if org then
        redis.call('ZADD', ARGV[2] .. '{' .. org .. '}:bopen', score, batch)
        redis.call('ZADD', new, 'LT', score, org)
      end
    else
      redis.call('ZADD', new, 'NX', score, org)
    end
    if org and redis.call('HEXISTS', index .. 'ver', org) == 0 then
      redis.call('HSET', index .. 'ver', org, redis.call('INCR', index .. 'seq'))
    end
  end
  redis.call('DEL', old)
  return 0
end
if kind == 'set' then
  if redis.call('EXISTS', old) == 1 then redis.call('SUNIONSTORE', new, new, old) end
  redis.call('DEL', old)
  return 0
end
if kind == 'month' then
  local v = redis.call('GET', old)
  if v then
    redis.call('INCRBY', new, v)
    redis.call('PEXPIRE', new, 40 * 86400000)
  end
  redis.call('DEL', old)
  return 0
end
if kind == 'daily' then
  local h = redis.call('HGETALL', old)
  for i = 1, #h, 2 do redis.call('HINCRBY', new, h[i], h[i + 1]) end
  redis.call('DEL', old)
  return 0
end
if kind == 'usage' then
  -- KEYS[2] is unused: each entry goes to its own organization's stream, ARGV[3] .. '{org}:usage'.
  local entries = redis.call('XRANGE', old, '-', '+', 'COUNT', tonumber(ARGV[2]))
  for _, e in ipairs(entries) do
    local org = ''
    for i = 1, #e[2], 2 do if e[2][i] == 'org' then org = e[2][i + 1] end end
    local stream = ARGV[3] .. '{' .. org .. '}:usage'
    local added = redis.pcall('XADD', stream, e[1], unpack(e[2]))
    if type(added) == 'table' and added.err then redis.call('XADD', stream, '*', unpack(e[2])) end
    redis.call('XDEL', old, e[1])
  end
  local left = redis.call('XLEN', old)
  if left == 0 then redis.call('DEL', old) end
  return left
end
return redis.error_reply('ERR unknown kind')
