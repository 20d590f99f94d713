-- Closes a journalled change once it is applied: removes its journal entry and frees its
-- entities (those still marked with its seq). One slot (the audit trail's hash tag).
-- KEYS[1] journal, KEYS[2] busy; ARGV[1] the change's seq. Returns 1, or 0 when already closed.
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
for _, entity in ipairs(cjson.decode(entry).entities) do
  if redis.call('HGET', KEYS[2], entity) == ARGV[1] then redis.call('HDEL', KEYS[2], entity) end
end
return 1
