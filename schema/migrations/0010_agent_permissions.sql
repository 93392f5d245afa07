CREATE TABLE `agent_consents` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`user_id` text NOT NULL,
	`api_key_id` integer NOT NULL,
	`agent_display_name` text NOT NULL,
	`reason` text NOT NULL,
	`requested_scopes` text NOT NULL,
	`granted_scopes` text,
	`status` text NOT NULL,
	`link_code_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`decided_at` integer,
	`token_delivered_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_consents_link_code_hash_unique` ON `agent_consents` (`link_code_hash`);--> statement-breakpoint
CREATE INDEX `agent_consents_key_idx` ON `agent_consents` (`api_key_id`);--> statement-breakpoint
CREATE TABLE `device_activations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`device_code_hash` text NOT NULL,
	`user_code_hash` text NOT NULL,
	`client_label` text NOT NULL,
	`status` text NOT NULL,
	`interval_seconds` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`last_polled_at` integer,
	`user_id` text,
	`workspace_id` text,
	`decided_at` integer,
	`api_key_id` integer,
	`delivered_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_activations_device_code_hash_unique` ON `device_activations` (`device_code_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `device_activations_user_code_hash_unique` ON `device_activations` (`user_code_hash`);--> statement-breakpoint
CREATE TABLE `permission_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`user_id` text NOT NULL,
	`api_key_id` integer NOT NULL,
	`scope` text NOT NULL,
	`reason` text NOT NULL,
	`requested_mode` text NOT NULL,
	`mode` text,
	`status` text NOT NULL,
	`link_code_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`decided_at` integer,
	`grant_expires_at` integer,
	`consumed_at` integer,
	`revoked_at` integer,
	`grant_token_hash` text,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `permission_requests_link_code_hash_unique` ON `permission_requests` (`link_code_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `permission_requests_grant_token_hash_unique` ON `permission_requests` (`grant_token_hash`);--> statement-breakpoint
CREATE INDEX `permission_requests_key_scope_idx` ON `permission_requests` (`api_key_id`,`scope`,`status`);--> statement-breakpoint
CREATE INDEX `permission_requests_workspace_idx` ON `permission_requests` (`workspace_id`,`id`);