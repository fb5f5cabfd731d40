-- The searches each request's web search server tool made (docs/decisions.md 327): billed by the
-- vendor per search, charged at its provider's price per search. A constant default rewrites no
-- partition.
ALTER TABLE usage_records ADD COLUMN web_search_requests integer NOT NULL DEFAULT 0;
