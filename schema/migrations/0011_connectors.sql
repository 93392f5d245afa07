CREATE TABLE `connector_connections` (
	`workspace_id` text NOT NULL,
	`connector_type` text NOT NULL,
	`ciphertext` text NOT NULL,
	`token_preview` text NOT NULL,
	`account` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `connector_type`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `execution_connectors` (
	`execution_id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connector_type` text NOT NULL,
	`repo` text,
	FOREIGN KEY (`execution_id`) REFERENCES `executions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
