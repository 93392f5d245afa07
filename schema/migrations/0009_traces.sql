CREATE TABLE `thread_messages` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`thread_id` text NOT NULL,
	`role` text NOT NULL,
	`content` text NOT NULL,
	`execution_id` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`thread_id`) REFERENCES `threads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `thread_messages_thread_idx` ON `thread_messages` (`thread_id`,`id`);--> statement-breakpoint
CREATE TABLE `threads` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`title` text NOT NULL,
	`skill_slug` text NOT NULL,
	`trace_key` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `threads_workspace_id_idx` ON `threads` (`workspace_id`,`id`);--> statement-breakpoint
CREATE TABLE `trace_segments` (
	`trace_id` text NOT NULL,
	`execution_id` integer NOT NULL,
	`event_from` integer NOT NULL,
	`event_to` integer NOT NULL,
	`seq_start` integer NOT NULL,
	`seq_end` integer NOT NULL,
	PRIMARY KEY(`trace_id`, `execution_id`, `event_from`),
	FOREIGN KEY (`trace_id`) REFERENCES `traces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `trace_segments_seq_idx` ON `trace_segments` (`trace_id`,`seq_start`);--> statement-breakpoint
CREATE TABLE `trace_turns` (
	`trace_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`actor_agent_slug` text,
	`actor_user_id` text NOT NULL,
	`actor_api_key_id` integer,
	`at` integer NOT NULL,
	PRIMARY KEY(`trace_id`, `seq`),
	FOREIGN KEY (`trace_id`) REFERENCES `traces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `traces` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`trace_key` text NOT NULL,
	`kind` text NOT NULL,
	`title` text NOT NULL,
	`status` text NOT NULL,
	`actor_user_id` text NOT NULL,
	`actor_api_key_id` integer,
	`actor_agent_slug` text,
	`target_execution_id` integer,
	`target_thread_id` text,
	`total_cost` integer DEFAULT 0 NOT NULL,
	`started_at` integer NOT NULL,
	`last_activity_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `traces_workspace_key_idx` ON `traces` (`workspace_id`,`trace_key`);--> statement-breakpoint
CREATE INDEX `traces_workspace_id_idx` ON `traces` (`workspace_id`,`id`);