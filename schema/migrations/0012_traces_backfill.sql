-- Traces for executions that predate the traces index (migration 0009): one per lineage.
-- Executions from before lineage keys (migration 0003) each become their own lineage first.
UPDATE `executions` SET `trace_key` = lower(hex(randomblob(16))) WHERE `trace_key` = '';
--> statement-breakpoint
INSERT INTO `traces` (`id`, `workspace_id`, `trace_key`, `kind`, `title`, `status`, `actor_user_id`, `actor_api_key_id`, `actor_agent_slug`, `target_execution_id`, `target_thread_id`, `total_cost`, `started_at`, `last_activity_at`)
SELECT
  -- A UUIDv7 from the lineage's first start, so the list's order holds for these traces too.
  lower(substr(printf('%012x', f.`started_at`), 1, 8) || '-' || substr(printf('%012x', f.`started_at`), 9, 4) || '-7' || substr(hex(randomblob(2)), 2, 3) || '-a' || substr(hex(randomblob(2)), 2, 3) || '-' || hex(randomblob(6))),
  l.`workspace_id`, l.`trace_key`, 'execution',
  substr(f.`skill_name` || ': ' || f.`input_text`, 1, 200),
  CASE l.`status` WHEN 'working' THEN 'running' ELSE l.`status` END,
  l.`user_id`, NULL, NULL, l.`id`, NULL,
  (SELECT SUM(c.`cost`) FROM `executions` c WHERE c.`workspace_id` = l.`workspace_id` AND c.`trace_key` = l.`trace_key`),
  f.`started_at`,
  MAX(l.`started_at`, COALESCE(l.`completed_at`, 0))
FROM `executions` l
JOIN `executions` f ON f.`id` = (SELECT MIN(m.`id`) FROM `executions` m WHERE m.`workspace_id` = l.`workspace_id` AND m.`trace_key` = l.`trace_key`)
WHERE l.`id` = (SELECT MAX(m.`id`) FROM `executions` m WHERE m.`workspace_id` = l.`workspace_id` AND m.`trace_key` = l.`trace_key`)
  AND l.`skill_slug` NOT LIKE 'agent:%'
  AND NOT EXISTS (SELECT 1 FROM `traces` t WHERE t.`workspace_id` = l.`workspace_id` AND t.`trace_key` = l.`trace_key`);
