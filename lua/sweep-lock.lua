-- sweep-lock: renews or releases the lost-request sweep's lock, only while it is still the
-- caller's. The lock lapses on its own; a scan that outlasted it lets another instance take
-- it, and the first one's renewal or release must then leave that instance's lock alone
-- (src/billing/lost-requests.ts).
--
-- KEYS[1] lock     string, the token of the instance sweeping (SET NX PX by its taker)
-- ARGV[1] token    the token the caller set when it took the lock
-- ARGV[2] ttl_ms   the lock's new lifetime in ms; '0': release it (delete)
--
-- Returns 1 when the lock was the caller's (renewed or deleted), 0 otherwise (nothing written).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == '0' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
