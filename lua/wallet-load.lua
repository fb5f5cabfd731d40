-- wallet-load: installs a wallet rebuilt from Postgres, unless another instance did first.
--
-- KEYS[1] wallet        hash { balance, reserved, r:<request_id> }
-- ARGV[1] balance_nano  integer string
--
-- Returns 1 when installed, 0 when the wallet already existed (left untouched).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'balance', ARGV[1], 'reserved', '0')
return 1
