-- oauth-take-code: takes an authorization code once. The first taker gets the code's grant,
-- and the code is replaced by a marker naming the app connection its exchange makes, so a
-- second presentation of the same code is recognised (and the connection revoked by the
-- caller) instead of looking merely unknown. Two concurrent takers: exactly one gets the
-- grant. A second presentation also flags the marker 'replayed:', so an exchange still
-- making its connection sees, once it has, that it must revoke it (oauthCodeReplayed).
--
-- KEYS[1] code   string, the grant (JSON with connection_id), expiring with the code
-- KEYS[2] used   string, the connection id of a code already taken ('replayed:' + id once
--                presented again)
-- ARGV[1] used_ttl_ms  how long a taken code is remembered
--
-- Returns {'taken', grant} the first time, {'used', connection_id} after, {'unknown'} for a
-- code that never existed or expired unused.
local grant = redis.call('GET', KEYS[1])
if grant then
  redis.call('DEL', KEYS[1])
  local connection = cjson.decode(grant)['connection_id']
  redis.call('SET', KEYS[2], connection, 'PX', ARGV[1])
  return {'taken', grant}
end
local used = redis.call('GET', KEYS[2])
if used then
  local connection = used
  if string.sub(used, 1, 9) == 'replayed:' then
    connection = string.sub(used, 10)
  else
    redis.call('SET', KEYS[2], 'replayed:' .. used, 'KEEPTTL')
  end
  return {'used', connection}
end
return {'unknown'}
