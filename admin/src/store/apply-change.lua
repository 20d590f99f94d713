-- Applies one hash slot's share of a journalled change (store/changes.ts), atomically: unless a
-- guarded entity here already carries a newer change (its `audit_seq` above this change's seq:
-- this change was applied and closed before, and a late replay must not undo the newer one),
-- runs the set-style operations in order. Every key is in this script's slot.
-- KEYS: the keys the operations name. ARGV[1] the change's seq, ARGV[2] JSON
-- {guards: [key index…], ops: [{op, k (key index), fields?, replace?, member?, value?}…]}.
-- Returns 1 when applied, 0 when a newer change is there (nothing written).
local seq = tonumber(ARGV[1])
local spec = cjson.decode(ARGV[2])
for _, g in ipairs(spec.guards) do
  local current = tonumber(redis.call('HGET', KEYS[g], 'audit_seq') or '0') or 0
  if current > seq then return 0 end
end
for _, op in ipairs(spec.ops) do
  local key = KEYS[op.k]
  if op.op == 'hset' then
    if op.replace then redis.call('DEL', key) end
    local args = {}
    for field, value in pairs(op.fields) do
      args[#args + 1] = field
      args[#args + 1] = value
    end
    if #args > 0 then redis.call('HSET', key, unpack(args)) end
  elseif op.op == 'del' then
    redis.call('DEL', key)
  elseif op.op == 'sadd' then
    redis.call('SADD', key, op.member)
  elseif op.op == 'srem' then
    redis.call('SREM', key, op.member)
  elseif op.op == 'set' then
    redis.call('SET', key, op.value)
  else
    return redis.error_reply('unknown operation ' .. tostring(op.op))
  end
end
return 1
