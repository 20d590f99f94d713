-- Records one answered request's usage exactly once, atomically: marks the admission as
-- recorded (a retried Record finds the mark and writes nothing), appends the record to the usage
-- stream and adds it to the organization's daily counters. The tokens were already charged at
-- admission. Identifiers and counts only, never text.
-- KEYS[1] recorded mark, KEYS[2] usage stream, KEYS[3] daily counters hash
-- ARGV: org, keyId, model, requestId, tokens, now, markTtlSeconds
-- Returns 1 when recorded now, 0 when it had been recorded before.
local org, key_id, model, request_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local tokens = tonumber(ARGV[5])
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[7])) then return 0 end
redis.call('XADD', KEYS[2], '*', 'org', org, 'key', key_id, 'model', model,
  'request_id', request_id, 'tokens', tokens, 'ts', ARGV[6])
redis.call('HINCRBY', KEYS[3], 'requests', 1)
redis.call('HINCRBY', KEYS[3], 'tokens', tokens)
redis.call('HINCRBY', KEYS[3], 'requests:' .. model, 1)
redis.call('HINCRBY', KEYS[3], 'tokens:' .. model, tokens)
return 1
