-- Validation of every number a script is given or reads, done before its first write: Redis
-- does not roll back a script that fails halfway. Lua numbers are doubles, exact for integers
-- only below 2^53; an amount must stay below 2^51 nano-units (~$2.25M) so that a sum of up to
-- four of them (spent + reserved + need, ...) is still exact. The API refuses larger amounts
-- long before (docs/limits.md); these checks make a script refuse them too, having written
-- nothing. Errors start with 'gw_amount_out_of_range' or 'gw_invalid_argument'.
local AMOUNT_LIMIT = 2251799813685248 -- 2^51

-- An integer amount in nano-units (negative only when `signed`), as a Lua number.
local function amount(text, name, signed)
  local pattern = signed and '^%-?%d+$' or '^%d+$'
  if type(text) ~= 'string' or #text > 17 or not string.match(text, pattern) then
    error('gw_invalid_argument: ' .. name .. ' is not an integer amount')
  end
  local value = tonumber(text)
  if value >= AMOUNT_LIMIT or value <= -AMOUNT_LIMIT then
    error('gw_amount_out_of_range: ' .. name .. ' is beyond 2^51 nano-units')
  end
  return value
end

-- An amount read from Redis: nil (a missing field) reads as 0.
local function stored_amount(text, name)
  if not text then return 0 end
  return amount(text, name, true)
end

-- An optional amount ('' for none): nil or the number.
local function optional_amount(text, name)
  if text == '' then return nil end
  return amount(text, name, false)
end

-- A time in epoch milliseconds (or any non-negative integer: a TTL, a counter).
local function integer(text, name)
  if type(text) ~= 'string' or #text > 16 or not string.match(text, '^%d+$') then
    error('gw_invalid_argument: ' .. name .. ' is not a non-negative integer')
  end
  return tonumber(text)
end

-- One of a few allowed words.
local function one_of(text, name, allowed)
  for _, word in ipairs(allowed) do
    if text == word then return text end
  end
  error('gw_invalid_argument: ' .. name .. ' is not one of ' .. table.concat(allowed, ', '))
end
