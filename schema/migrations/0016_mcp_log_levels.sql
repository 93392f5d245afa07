CREATE TABLE `mcp_log_levels` (
	`credential` text PRIMARY KEY NOT NULL,
	`level` text NOT NULL,
	`updated_at` integer NOT NULL
);
