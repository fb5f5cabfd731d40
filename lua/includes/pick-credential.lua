-- Picks a provider credential: tiers in priority order ('id1,id2|id3': tier 1 holds id1 and
-- id2), skipping credentials in cooldown, rotating within a tier. Returns the id, or nil and
-- when the first of them stops cooling down (ms; nil without candidates).
-- cooldowns: hash credential_id -> cooling until (ms); rotation: hash tier -> counter.
local function pick_credential(cooldowns, rotation, candidates, now_ms)
  if candidates == '' then return nil end
  local tier_index = 0
  local soonest = nil
  for tier in string.gmatch(candidates, '[^|]+') do
    tier_index = tier_index + 1
    local ids = {}
    for id in string.gmatch(tier, '[^,]+') do ids[#ids + 1] = id end
    local until_ms = redis.call('HMGET', cooldowns, unpack(ids))
    local start = redis.call('HINCRBY', rotation, tier_index, 1)
    for offset = 0, #ids - 1 do
      local index = ((start + offset) % #ids) + 1
      local cooling_until = until_ms[index] and tonumber(until_ms[index])
      if not cooling_until or cooling_until <= tonumber(now_ms) then
        return ids[index]
      end
      if not soonest or cooling_until < soonest then soonest = cooling_until end
    end
  end
  return nil, soonest
end
