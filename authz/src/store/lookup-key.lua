-- Fetches a key record and its organization's record in one round trip.
-- KEYS[1] key hash; ARGV[1] the Redis key prefix (the org hash is <prefix>org:{<id>}: contract/access-records.ts).
-- The org key is derived here, so this script assumes one Redis, not a cluster.
local key = redis.call('HGETALL', KEYS[1])
if #key == 0 then return { key, {} } end
local org_id
for i = 1, #key, 2 do
  if key[i] == 'org' then org_id = key[i + 1] end
end
if not org_id then return { key, {} } end
return { key, redis.call('HGETALL', ARGV[1] .. 'org:{' .. org_id .. '}') }
