CREATE TABLE `agents` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`instructions` text NOT NULL,
	`model` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agents_workspace_slug_idx` ON `agents` (`workspace_id`,`slug`);--> statement-breakpoint
CREATE TABLE `workflow_runs` (
	`run_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`workflow_id` text NOT NULL,
	`status` text NOT NULL,
	`resource_id` text NOT NULL,
	`snapshot` text NOT NULL,
	`version` integer NOT NULL,
	`thread_id` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `workflow_runs_workspace_created_idx` ON `workflow_runs` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `workflow_runs_workspace_status_idx` ON `workflow_runs` (`workspace_id`,`status`);--> statement-breakpoint
CREATE TABLE `workflow_step_results` (
	`run_id` text NOT NULL,
	`step_id` text NOT NULL,
	`status` text NOT NULL,
	`output` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`run_id`, `step_id`),
	FOREIGN KEY (`run_id`) REFERENCES `workflow_runs`(`run_id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `workflows` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`declared_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`category` text DEFAULT '' NOT NULL,
	`requires_connector` text,
	`definition` text NOT NULL,
	`storage_path` text NOT NULL,
	`installed_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workflows_workspace_slug_idx` ON `workflows` (`workspace_id`,`slug`);--> statement-breakpoint
CREATE INDEX `workflows_workspace_declared_idx` ON `workflows` (`workspace_id`,`declared_id`);