-- Appends one audit record to the hash chain, atomically and only if the chain's head is still
-- the one the record was hashed against (Redis Lua has no SHA-256, so the caller hashes and this
-- script compares and sets; on a race the caller re-reads the head and tries again).
-- KEYS[1] audit stream, KEYS[2] chain head hash {seq, hash}
-- ARGV[1] the head seq the record follows ('0' for the first), ARGV[2] the record's seq,
-- ARGV[3] the record's hash, ARGV[4..] the record's field/value pairs.
-- Returns the stream id, or false when the head moved.
local head = redis.call('HGET', KEYS[2], 'seq') or '0'
if head ~= ARGV[1] then return false end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
redis.call('HSET', KEYS[2], 'seq', ARGV[2], 'hash', ARGV[3])
return id
