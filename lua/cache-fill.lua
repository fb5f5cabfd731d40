-- cache-fill: stores a value read from Postgres in the shared cache, unless the entry was
-- invalidated since the reader looked (its generation moved): a fill never resurrects a
-- revoked or changed record.
--
-- KEYS[1] value        string, the cached JSON ('null': known to be absent)
-- KEYS[2] generation   string counter, incremented by every invalidation of the entry
-- ARGV[1] expected_generation  the generation the reader saw before reading Postgres ('0': none)
-- ARGV[2] value        the JSON to store
-- ARGV[3] ttl_s        its lifetime in seconds
--
-- Returns 1 when stored, 0 when the generation moved (nothing written).
local generation = redis.call('GET', KEYS[2]) or '0'
if generation ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
