CREATE TABLE `run_tool_calls` (
	`key` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL
);
