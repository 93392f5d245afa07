ALTER TABLE `executions` ADD `turn_key` text;--> statement-breakpoint
ALTER TABLE `executions` ADD `claimed_at` integer;--> statement-breakpoint
CREATE INDEX `executions_working_claimed_idx` ON `executions` (`claimed_at`) WHERE "executions"."status" = 'working';--> statement-breakpoint
-- Executions already working keep the key of their newest unsettled hold, so the reconciler can release it.
UPDATE `executions` SET
  `turn_key` = (
    SELECT `execution_id` FROM `credit_reservations`
    WHERE `settled_at` IS NULL AND `execution_id` LIKE 'exec_' || `executions`.`id` || ':%'
    ORDER BY `id` DESC LIMIT 1
  ),
  `claimed_at` = `started_at`
WHERE `status` = 'working';
