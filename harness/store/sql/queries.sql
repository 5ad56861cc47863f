-- Named queries shared by every SQL backend. Parameters are :name; {for_update} is the
-- dialect's row lock (FOR UPDATE on PostgreSQL, nothing on SQLite, whose writers are serialised).

-- insert_job --
-- Rule 1: one insert-or-conflict statement; no read-then-insert. A row back means this call
-- created the job, exactly as given (the store builds it from its own values: no re-reading).
INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, contract, input, params, policy,
                  max_open_attempts, status, version, completed_by, result, created_at, updated_at)
VALUES (:id, :owner_id, :idempotency_key, :fingerprint, :contract, :input, :params, :policy,
        :max_open_attempts, 'pending', 1, NULL, NULL, :now, :now)
ON CONFLICT (owner_id, idempotency_key) DO NOTHING
RETURNING id

-- job_by_key --
SELECT {job_columns} FROM jobs WHERE owner_id = :owner_id AND idempotency_key = :idempotency_key

-- job_by_id --
SELECT {job_columns} FROM jobs WHERE id = :job_id AND owner_id = :owner_id

-- insert_attempt --
-- Rule 5: the partial unique index on (job_id, open_slot) refuses a second holder of a slot.
INSERT INTO attempts (id, job_id, owner_id, provider, state, read_version, open_slot,
                      created_at, updated_at)
SELECT :id, j.id, j.owner_id, :provider, 'starting', j.version, :slot, :now, :now
FROM jobs j
WHERE j.id = :job_id AND j.owner_id = :owner_id
  AND j.status NOT IN ('succeeded', 'cancelled') AND :slot <= j.max_open_attempts
ON CONFLICT DO NOTHING
RETURNING {attempt_columns}

-- mark_job_running --
UPDATE jobs SET status = 'running', updated_at = :now WHERE id = :job_id AND status = 'pending'

-- open_attempts --
SELECT {attempt_columns} FROM attempts WHERE job_id = :job_id AND open_slot IS NOT NULL ORDER BY seq

-- attempts_of_job --
SELECT {attempt_columns} FROM attempts WHERE job_id = :job_id ORDER BY seq

-- attempt_by_id --
SELECT {attempt_columns} FROM attempts WHERE id = :attempt_id AND owner_id = :owner_id {for_update}

-- move_attempt --
-- Guarded by the state the caller read: a concurrent event makes this touch zero rows.
UPDATE attempts
SET state = :to_state, open_slot = :open_slot, outcome = :outcome, error = :error,
    result_sha256 = :result_sha256, cancel_reason = :cancel_reason, updated_at = :now
WHERE id = :attempt_id AND state = :from_state
RETURNING {attempt_columns}

-- claim_result --
-- Rule 7: the compare-and-swap. Zero rows: the attempt lost.
UPDATE jobs
SET result = :result, completed_by = :attempt_id, status = 'succeeded',
    version = version + 1, updated_at = :now
WHERE id = :job_id AND version = :read_version AND completed_by IS NULL

-- insert_race --
INSERT INTO races (id, job_id, attempt_id, at, payload_sha256, winner_attempt_id, reason)
VALUES (:id, :job_id, :attempt_id, :now, :payload_sha256, :winner_attempt_id, :reason)

-- races_of_job --
SELECT {race_columns} FROM races WHERE job_id = :job_id ORDER BY seq

-- jobs_with_id_prefix --
-- The jobs whose ids start with :prefix (a scenario run's: job_<run>_<n>): the side-effect
-- counter of an in-process store target, which runs no handler.
SELECT count(*) AS n FROM jobs WHERE substr(id, 1, :prefix_length) = :prefix
