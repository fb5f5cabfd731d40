-- account-load: installs an account rebuilt from Postgres, unless it is already there.
--
-- KEYS[1] account       hash { <field>, reserved }
-- KEYS[2] expiries      the account's hold-expiry zset: emptied on install, since the holds
--                       it lists belonged to the account that was lost
-- ARGV[1] field         'balance' (wallet) or 'spent' (a cap period or a user's period)
-- ARGV[2] amount_nano   integer string
-- ARGV[3] expire_at_ms  '' for no expiry (wallet); else when the period's account can go
--
-- Returns 1 when installed, 0 when it already existed (left untouched). Validates every
-- argument first: an amount out of range is refused with nothing written.
--#include amounts

one_of(ARGV[1], 'field', {'balance', 'spent'})
amount(ARGV[2], 'amount_nano', true)
if ARGV[3] ~= '' then integer(ARGV[3], 'expire_at_ms') end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'reserved', '0')
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return 1
