-- settings: defaults, every valid value, invalid values rejected, and the
-- gpuhash prefix reserved.  The settings only tests and developers use are
-- in PostgreSQL's Developer Options category, the others in Customized
-- Options; every one is described (pg_settings' short_desc and extra_desc).
SELECT name, boot_val, vartype, context, enumvals, category
  FROM pg_settings WHERE name LIKE 'gpuhash.%' ORDER BY category, name;
SELECT name FROM pg_settings
 WHERE name LIKE 'gpuhash.%' AND (short_desc IS NULL OR extra_desc IS NULL);

-- gpuhash.enabled
SET gpuhash.enabled = off;
SHOW gpuhash.enabled;
SET gpuhash.enabled = on;
SHOW gpuhash.enabled;
SET gpuhash.enabled = 'maybe';
SHOW gpuhash.enabled;
RESET gpuhash.enabled;

-- gpuhash.device
SET gpuhash.device = auto;
SHOW gpuhash.device;
SET gpuhash.device = gpu;
SHOW gpuhash.device;
SET gpuhash.device = cpu;
SHOW gpuhash.device;
SET gpuhash.device = 'GPU';
SHOW gpuhash.device;
SET gpuhash.device = 'tpu';
SET gpuhash.device = '';
SHOW gpuhash.device;
RESET gpuhash.device;

-- gpuhash.force_join
SET gpuhash.force_join = on;
SHOW gpuhash.force_join;
SET gpuhash.force_join = 2;
SHOW gpuhash.force_join;
RESET gpuhash.force_join;
SHOW gpuhash.force_join;

-- gpuhash.inject_alloc_failure (test-only, superuser)
SET gpuhash.inject_alloc_failure = -1;
SET gpuhash.inject_alloc_failure = 3;
SHOW gpuhash.inject_alloc_failure;
RESET gpuhash.inject_alloc_failure;
CREATE ROLE gpuhash_plain_user;
SET ROLE gpuhash_plain_user;
SET gpuhash.inject_alloc_failure = 1;
SET gpuhash.device = cpu;
SHOW gpuhash.device;
RESET ROLE;
DROP ROLE gpuhash_plain_user;
RESET gpuhash.device;

-- the prefix is reserved: misspelt settings are errors, not placeholders
SET gpuhash.enable = on;
SET gpuhash.devices = 'gpu';

-- SET LOCAL reverts at the end of the transaction
BEGIN;
SET LOCAL gpuhash.enabled = off;
SHOW gpuhash.enabled;
COMMIT;
SHOW gpuhash.enabled;
