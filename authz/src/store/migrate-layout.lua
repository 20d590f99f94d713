-- Moves one key of the settlement's layout before organizations had a hash tag (issue 28) to its
-- tagged name, atomically, so authz replicas migrating at once never count anything twice.
-- One Redis only (the old layout never ran on a cluster). Identifiers and counts only.
-- KEYS[1] old key, KEYS[2] new key. ARGV[1] kind: 'hash' (a record: renamed, unless one was
-- written under the new name since, which stays), 'set' (merged into the new one), 'month' (a counter: added to the new one),
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
