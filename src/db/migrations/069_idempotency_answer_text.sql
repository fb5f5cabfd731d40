-- A replayed Idempotency-Key answer is the first answer byte for byte: jsonb keeps an object's
-- keys in its own order (shorter keys first), so an answer kept only in answer_clear came back
-- with its fields reordered. answer_clear_text: the same answer as the JSON text that was sent,
-- written with answer_clear; a gateway reads it only while it equals answer_clear (as jsonb),
-- so an answer_clear a gateway of the previous version wrote over an older key's (a rolling
-- update) is never shadowed by that older text. answer_clear stays for that version.
ALTER TABLE idempotency_keys ADD COLUMN answer_clear_text text;
