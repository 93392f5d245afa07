ALTER TABLE `executions` ADD `skill_name` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `skill_version_id` integer;--> statement-breakpoint
ALTER TABLE `executions` ADD `input_text` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `source` text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `interface` text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `cost` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `input_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `output_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `executions` ADD `completed_at` integer;--> statement-breakpoint
ALTER TABLE `executions` ADD `execution_time_ms` integer DEFAULT 0 NOT NULL;