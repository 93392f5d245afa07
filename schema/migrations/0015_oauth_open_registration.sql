-- Clients may register without a session (RFC 7591 open registration) or be named by a Client
-- ID Metadata Document URL: created_by becomes optional. SQLite changes a column's nullability
-- only by rebuilding the table, and dropping the old one cascades to codes, grants and tokens,
-- so those are kept aside and put back.
PRAGMA defer_foreign_keys = true;
--> statement-breakpoint
CREATE TABLE `oauth_codes_keep` AS SELECT * FROM `oauth_codes`;
--> statement-breakpoint
CREATE TABLE `oauth_grants_keep` AS SELECT * FROM `oauth_grants`;
--> statement-breakpoint
CREATE TABLE `oauth_tokens_keep` AS SELECT * FROM `oauth_tokens`;
--> statement-breakpoint
CREATE TABLE `oauth_clients_new` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`redirect_uris` text NOT NULL,
	`grant_types` text NOT NULL,
	`application_type` text DEFAULT 'web' NOT NULL,
	`created_by` text,
	`metadata_expires_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `oauth_clients_new` (`id`, `name`, `redirect_uris`, `grant_types`, `created_by`, `created_at`)
	SELECT `id`, `name`, `redirect_uris`, `grant_types`, `created_by`, `created_at` FROM `oauth_clients`;
--> statement-breakpoint
DROP TABLE `oauth_clients`;
--> statement-breakpoint
ALTER TABLE `oauth_clients_new` RENAME TO `oauth_clients`;
--> statement-breakpoint
INSERT OR IGNORE INTO `oauth_codes` SELECT * FROM `oauth_codes_keep`;
--> statement-breakpoint
INSERT OR IGNORE INTO `oauth_grants` SELECT * FROM `oauth_grants_keep`;
--> statement-breakpoint
INSERT OR IGNORE INTO `oauth_tokens` SELECT * FROM `oauth_tokens_keep`;
--> statement-breakpoint
DROP TABLE `oauth_codes_keep`;
--> statement-breakpoint
DROP TABLE `oauth_grants_keep`;
--> statement-breakpoint
DROP TABLE `oauth_tokens_keep`;
--> statement-breakpoint
CREATE INDEX `oauth_clients_created_idx` ON `oauth_clients` (`created_at`);
