-- failover-harness schema v2 (PostgreSQL): the intent's JSON columns hold its canonical text
-- (RFC 8785, the text the fingerprint is computed over), exactly as SQLite's TEXT columns do, so
-- an intent reads back the same on every backend ({"a": 1.0} is {"a":1} on both). `json` keeps
-- the text as written; `jsonb` re-normalised numbers (1.0 stayed 1.0, 1e+21 became an integer).
-- Rows written before this migration keep jsonb's normal form of what they held.
ALTER TABLE jobs
    ALTER COLUMN input TYPE json USING input::json,
    ALTER COLUMN params TYPE json USING params::json,
    ALTER COLUMN policy TYPE json USING policy::json;
