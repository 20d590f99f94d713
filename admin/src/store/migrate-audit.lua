-- Moves the audit trail from its old keys (`<prefix>audit`, `<prefix>audit:head`, of different
-- slots) to the tagged ones, once, when the new head is absent and the old one present. One
-- Redis or Sentinel only (a Redis Cluster starts empty).
-- KEYS[1] old stream, KEYS[2] old head, KEYS[3] new stream, KEYS[4] new head. Returns 1 when moved.
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('RENAME', KEYS[1], KEYS[3]) end
redis.call('RENAME', KEYS[2], KEYS[4])
return 1
