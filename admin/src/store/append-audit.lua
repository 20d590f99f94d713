-- Appends one audit record to the hash chain, atomically and only if the chain's head is still
-- the one the record was hashed against (Redis Lua has no SHA-256 or Ed25519, so the caller
-- hashes and signs, and this script compares and sets; on a race the caller re-reads the head
-- and tries again). The record's time must come from Redis's clock: never earlier than the
-- head's, never more than MAX_LAG_MS behind TIME, never ahead of it (beyond the head's own
-- time), so a writer whose clock is set back cannot file a record before the one it follows.
-- Every key shares one hash tag, so this is one slot of a Redis Cluster.
-- KEYS[1] audit stream, KEYS[2] chain head hash {seq, hash, at_ms, sig},
-- KEYS[3] journal: seq -> the change not yet applied (JSON, with `entities`),
-- KEYS[4] busy: entity key -> the seq of its change not yet applied.
-- ARGV[1] the head seq the record follows ('0' for the first), ARGV[2] the record's seq,
-- ARGV[3] its hash, ARGV[4] its time (ms), ARGV[5] its signature,
-- ARGV[6] mode: 'plain' (a record), 'journal' (a record of a change about to be applied:
-- ARGV[7] is its journal entry; refused with 'busy' while a change to one of its entities is
-- unapplied), 'failed' (a record that the change ARGV[7] (its seq) was not applied, which
-- closes its journal entry; 'resolved' when another process closed it first),
-- ARGV[8..] the record's field/value pairs.
-- Returns the stream id, 'moved' when the head moved, 'stale' when the time is refused, or
-- 'busy' / 'resolved' as above.
local MAX_LAG_MS = 60000
local mode = ARGV[6]
local head = redis.call('HMGET', KEYS[2], 'seq', 'at_ms')
if (head[1] or '0') ~= ARGV[1] then return 'moved' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = tonumber(ARGV[4])
local head_at = tonumber(head[2] or '0')
if at == nil or at < head_at or at < now - MAX_LAG_MS or at > math.max(now, head_at) then return 'stale' end
local entities = {}
if mode == 'journal' then
  entities = cjson.decode(ARGV[7]).entities
  for _, entity in ipairs(entities) do
    if redis.call('HEXISTS', KEYS[4], entity) == 1 then return 'busy' end
  end
elseif mode == 'failed' then
  if redis.call('HEXISTS', KEYS[3], ARGV[7]) == 0 then return 'resolved' end
elseif mode ~= 'plain' then
  return redis.error_reply('unknown mode')
end
local fields = {}
for i = 8, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
redis.call('HSET', KEYS[2], 'seq', ARGV[2], 'hash', ARGV[3], 'at_ms', ARGV[4], 'sig', ARGV[5])
if mode == 'journal' then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[7])
  for _, entity in ipairs(entities) do redis.call('HSET', KEYS[4], entity, ARGV[2]) end
elseif mode == 'failed' then
  redis.call('HDEL', KEYS[3], ARGV[7])
  -- Frees the entities marked with its seq (the busy hash holds only open changes' entities).
  local busy = redis.call('HGETALL', KEYS[4])
  for i = 1, #busy, 2 do
    if busy[i + 1] == ARGV[7] then redis.call('HDEL', KEYS[4], busy[i]) end
  end
end
return id
