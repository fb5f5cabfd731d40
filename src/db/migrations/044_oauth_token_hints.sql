-- OAuth tokens issued before decision 277 were stored with a 13-character hint
-- ("gw_oauth_" and four characters of the secret). Every key's hint is its first ten
-- characters: trim the old ones, so no token shows more of its secret than the rule allows.
UPDATE api_keys
   SET key_hint = left(key_hint, 10) || '…'
 WHERE kind = 'oauth_token' AND char_length(key_hint) > 11;
