-- Closes a journalled change once it is applied: removes its journal entry and frees the
-- entities marked with its seq (the busy hash holds only open changes' entities, so it is
-- small). One slot (the audit trail's hash tag).
-- KEYS[1] journal, KEYS[2] busy; ARGV[1] the change's seq. Returns 1, or 0 when already closed.
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
local busy = redis.call('HGETALL', KEYS[2])
for i = 1, #busy, 2 do
  if busy[i + 1] == ARGV[1] then redis.call('HDEL', KEYS[2], busy[i]) end
end
return 1
