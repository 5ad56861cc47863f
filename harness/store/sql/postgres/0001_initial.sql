-- failover-harness schema v1 (PostgreSQL). The database, not the application, enforces the rules.
CREATE TABLE jobs (
    seq               BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                TEXT        NOT NULL UNIQUE,
    owner_id          TEXT        NOT NULL,
    idempotency_key   TEXT        NOT NULL,
    fingerprint       TEXT        NOT NULL,
    contract          TEXT        NOT NULL,
    input             JSONB       NOT NULL,
    params            JSONB       NOT NULL,
    policy            JSONB       NOT NULL,
    max_open_attempts SMALLINT    NOT NULL CHECK (max_open_attempts IN (1, 2)),
    status            TEXT        NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    version           BIGINT      NOT NULL,
    completed_by      TEXT,
    result            JSONB,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    -- Rule 1: one job per (owner, key), held by the database.
    CONSTRAINT jobs_owner_key UNIQUE (owner_id, idempotency_key),
    CHECK ((status = 'succeeded') = (completed_by IS NOT NULL))
);

CREATE TABLE attempts (
    seq            BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id             TEXT        NOT NULL UNIQUE,
    job_id         TEXT        NOT NULL REFERENCES jobs (id),
    owner_id       TEXT        NOT NULL,
    provider       TEXT        NOT NULL,
    state          TEXT        NOT NULL CHECK (state IN ('starting', 'running', 'unknown', 'succeeded', 'failed', 'cancelled')),
    read_version   BIGINT      NOT NULL,
    -- An open attempt holds a slot 1..max_open_attempts; terminal attempts hold none.
    open_slot      SMALLINT    CHECK (open_slot IN (1, 2)),
    outcome        TEXT        CHECK (outcome IN ('won', 'lost')),
    error          JSONB,
    result_sha256  TEXT,
    cancel_reason  TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    CHECK ((open_slot IS NOT NULL) = (state IN ('starting', 'running', 'unknown')))
);

-- Rule 5: at most max_open_attempts open attempts per job, held by the database.
CREATE UNIQUE INDEX attempts_open_slot ON attempts (job_id, open_slot) WHERE open_slot IS NOT NULL;
CREATE INDEX attempts_job ON attempts (job_id, seq);

CREATE TABLE races (
    seq                BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                 TEXT        NOT NULL UNIQUE,
    job_id             TEXT        NOT NULL REFERENCES jobs (id),
    attempt_id         TEXT        NOT NULL REFERENCES attempts (id),
    at                 TIMESTAMPTZ NOT NULL,
    payload_sha256     TEXT        NOT NULL,
    winner_attempt_id  TEXT,
    reason             TEXT        NOT NULL
);
CREATE INDEX races_job ON races (job_id, seq);
