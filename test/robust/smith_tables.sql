-- smith_tables.sql: extra tables for the sqlsmith runs (test/robust/sqlsmith.sh),
-- loaded after the regression suites' own: keys of many types, NULLs,
-- duplicates and skew, so random equi-joins hit GpuHashJoin's paths.
CREATE TABLE sm_a AS
  SELECT g AS id, (g % 97)::int AS k, (g % 97)::int8 AS k8, (g % 13)::int2 AS k2,
         CASE WHEN g % 11 = 0 THEN NULL ELSE md5((g % 50)::text) END AS t,
         (g % 7)::numeric / 3 AS n, (g % 5)::float8 / 2 AS f, date '2026-01-01' + g % 30 AS d,
         (g % 3 = 0) AS b, ('{' || g % 4 || ',' || g % 6 || '}')::int[] AS arr,
         CASE WHEN g % 17 = 0 THEN NULL ELSE g % 41 END AS nk
    FROM generate_series(1, 3000) g;
CREATE TABLE sm_b AS
  SELECT g AS id, (g % 113)::int AS k, (g % 57)::int8 AS k8, (g % 9)::int2 AS k2,
         md5((g % 70)::text) AS t, (g % 9)::numeric / 3 AS n, (g % 4)::float8 / 2 AS f,
         date '2026-01-01' + g % 45 AS d, (g % 2 = 0) AS b,
         ('{' || g % 3 || ',' || g % 6 || '}')::int[] AS arr,
         CASE WHEN g % 5 = 0 THEN NULL ELSE g % 41 END AS nk
    FROM generate_series(1, 2000) g;
CREATE TABLE sm_skew AS SELECT CASE WHEN g % 10 < 8 THEN 1 ELSE g END AS k, g AS v FROM generate_series(1, 2000) g;
CREATE TABLE sm_empty (k int, t text);
CREATE TABLE sm_misc AS
  SELECT g AS id, jsonb_build_object('k', g % 20) AS j, ('10.0.0.' || g % 9)::inet AS ip,
         (g % 6)::text::name AS nm, interval '1 hour' * (g % 8) AS iv, timestamptz '2026-01-01' + g * interval '1 min' AS ts
    FROM generate_series(1, 500) g;
CREATE VIEW sm_view AS SELECT a.id, a.k, b.t FROM sm_a a JOIN sm_b b ON a.k = b.k;
