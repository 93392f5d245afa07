ALTER TABLE `retention_windows` ADD `executions_days` integer;--> statement-breakpoint
-- Written by hand: drizzle-kit splits an expression's arguments into quoted column names.
CREATE INDEX `executions_workspace_ended_idx` ON `executions` (`workspace_id`, coalesce(`completed_at`, `claimed_at`, `started_at`)) WHERE `status` <> 'working';
