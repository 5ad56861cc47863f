-- The claim in one statement (PostgreSQL): rule 7's compare-and-swap, the attempt's move to
-- succeeded (won or lost) and, when it lost, the race with the winner's id, atomically. Only an
-- open attempt (starting, running, unknown) is claimed; no row back means it was not open (or
-- not this owner's), and the store takes the statement-by-statement path to say why.
-- When a concurrent claim holds the job row, the UPDATE waits for it and re-checks; the winner
-- is then read under FOR SHARE, so the race names it.
WITH attempt AS (
    SELECT id, job_id, read_version FROM attempts
    WHERE id = :attempt_id AND owner_id = :owner_id
      AND state IN ('starting', 'running', 'unknown')
    FOR UPDATE
), claimed AS (
    UPDATE jobs
    SET result = :result, completed_by = attempt.id, status = 'succeeded',
        version = jobs.version + 1, updated_at = :now
    FROM attempt
    WHERE jobs.id = attempt.job_id AND jobs.version = attempt.read_version
      AND jobs.completed_by IS NULL
    RETURNING jobs.id
), winner AS (
    SELECT jobs.completed_by FROM jobs JOIN attempt ON jobs.id = attempt.job_id
    WHERE NOT EXISTS (SELECT 1 FROM claimed)
    FOR SHARE OF jobs
), raced AS (
    INSERT INTO races (id, job_id, attempt_id, at, payload_sha256, winner_attempt_id, reason)
    SELECT :race_id, attempt.job_id, attempt.id, :now, :result_sha256, winner.completed_by,
           CASE WHEN winner.completed_by IS NULL THEN 'version_changed'
                ELSE 'already_completed' END
    FROM attempt, winner
    RETURNING id
), moved AS (
    UPDATE attempts
    SET state = 'succeeded', open_slot = NULL, result_sha256 = :result_sha256, updated_at = :now,
        outcome = CASE WHEN EXISTS (SELECT 1 FROM claimed) THEN 'won' ELSE 'lost' END
    FROM attempt
    WHERE attempts.id = attempt.id
    RETURNING {qualified_attempt_columns}
)
SELECT moved.*, (SELECT count(*) FROM raced) AS races FROM moved
