ALTER TABLE `executions` ADD `parent_execution_id` integer;--> statement-breakpoint
ALTER TABLE `executions` ADD `trace_key` text DEFAULT '' NOT NULL;