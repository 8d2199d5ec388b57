-- The hand-written baseline: the contract's four filters straight from read_json.
--
-- No line-level validation (malformed lines are skipped by ignore_errors), no
-- quarantine, no history, no incremental state, lower() instead of NFKC + casefold:
-- the floor any implementation pays to read the files and compute a golden set.
-- Run by benchmarks/run_sql.py, which sets the variables `logs` (a glob over
-- LOGS/dt=*/*.jsonl*) and `corpus` (the snapshot file).

CREATE TEMP TABLE raw AS
SELECT * FROM read_json(getvariable('logs'), format = 'newline_delimited', ignore_errors = true,
  filename = true, hive_partitioning = true,
  columns = {event: 'VARCHAR', serve_id: 'VARCHAR', ts: 'VARCHAR', project: 'VARCHAR', task: 'VARCHAR',
             doc_id: 'VARCHAR', verdict: 'VARCHAR',
             items: 'STRUCT(doc_id VARCHAR, doc_version VARCHAR, channel VARCHAR, "rank" BIGINT)[]'});

-- First serve line per serve_id in (dt, file) order; the latest verdict per item.
CREATE TEMP TABLE serves AS
SELECT serve_id, try_cast(ts AS TIMESTAMPTZ) AS ts, project, task,
       array_to_string(string_split_regex(lower(trim(task)), '\s+'), ' ') AS task_norm, items
FROM raw WHERE event = 'serve' AND serve_id IS NOT NULL AND len(items) > 0
QUALIFY row_number() OVER (PARTITION BY serve_id ORDER BY dt, filename) = 1;

CREATE TEMP TABLE winning AS
SELECT serve_id, doc_id, verdict, try_cast(ts AS TIMESTAMPTZ) AS judged_at
FROM raw WHERE event = 'verdict' AND verdict IN ('helped', 'noise', 'wrong')
QUALIFY row_number() OVER (PARTITION BY serve_id, doc_id
                           ORDER BY try_cast(ts AS TIMESTAMPTZ) DESC, dt DESC, filename DESC) = 1;

CREATE TEMP TABLE corpus AS
SELECT doc_id, version, superseded_by FROM read_json(getvariable('corpus'), format = 'newline_delimited')
WHERE status = 'active';

CREATE TEMP TABLE judged AS
SELECT s.serve_id, s.ts AS serve_ts, s.project, s.task, s.task_norm,
       i.it.doc_id, i.it.doc_version, i.it.channel, w.verdict, w.judged_at
FROM (SELECT *, unnest(items) AS it FROM serves) i
JOIN serves s USING (serve_id)
JOIN winning w ON w.serve_id = s.serve_id AND w.doc_id = i.it.doc_id;

-- 1 always_served, 2 retired, 3 repeats (latest serve per query and doc), 4 no_positive.
CREATE TEMP TABLE after_repeats AS
SELECT j.*, c.version AS current_version, c.superseded_by
FROM judged j JOIN corpus c USING (doc_id)
WHERE j.channel = 'ranked'
QUALIFY row_number() OVER (PARTITION BY j.project, j.task_norm, j.doc_id
                           ORDER BY j.serve_ts DESC, j.serve_id DESC) = 1;

CREATE OR REPLACE TABLE golden_set AS
SELECT substr(sha256(project || chr(31) || task_norm), 1, 16) AS query_id, project,
       max_by(task, serve_ts) OVER (PARTITION BY project, task_norm) AS task,
       doc_id, doc_version, verdict, CASE WHEN verdict = 'helped' THEN 1 ELSE 0 END AS relevance,
       serve_id, judged_at,
       CASE WHEN superseded_by IS NOT NULL THEN 'superseded'
            WHEN current_version <> doc_version THEN 'version_changed' END AS stale_reason
FROM after_repeats
WHERE (project, task_norm) IN (SELECT project, task_norm FROM after_repeats WHERE verdict = 'helped');

CREATE OR REPLACE TABLE filter_funnel AS
SELECT * FROM (VALUES
  ('judged', (SELECT count(*) FROM judged)),
  ('always_served', (SELECT count(*) FROM judged WHERE channel = 'ranked')),
  ('retired', (SELECT count(*) FROM judged j JOIN corpus c USING (doc_id) WHERE j.channel = 'ranked')),
  ('repeats', (SELECT count(*) FROM after_repeats)),
  ('no_positive', (SELECT count(*) FROM golden_set))
) AS t(step, judgments_left);
