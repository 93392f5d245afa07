-- catalog_skills.repository becomes nullable (a public URL or null); no table references catalog_skills.
CREATE TABLE `__new_catalog_skills` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL,
	`category` text NOT NULL,
	`prompt` text NOT NULL,
	`author` text NOT NULL,
	`version` text NOT NULL,
	`repository` text,
	`commit_hash` text NOT NULL,
	`license` text,
	`content_checksum` text NOT NULL,
	`storage_path` text NOT NULL,
	`files_count` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_catalog_skills`("id", "slug", "name", "description", "category", "prompt", "author", "version", "repository", "commit_hash", "license", "content_checksum", "storage_path", "files_count", "updated_at") SELECT "id", "slug", "name", "description", "category", "prompt", "author", "version", "repository", "commit_hash", "license", "content_checksum", "storage_path", "files_count", "updated_at" FROM `catalog_skills`;--> statement-breakpoint
DROP TABLE `catalog_skills`;--> statement-breakpoint
ALTER TABLE `__new_catalog_skills` RENAME TO `catalog_skills`;--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_skills_slug_unique` ON `catalog_skills` (`slug`);--> statement-breakpoint
CREATE INDEX `catalog_category_idx` ON `catalog_skills` (`category`,`id`);--> statement-breakpoint
-- Category ids are lower-case slugs: `General` becomes `general`.
UPDATE `catalog_skills` SET `category` = 'general' WHERE `category` = 'General';--> statement-breakpoint
UPDATE `skill_versions` SET `category` = 'general' WHERE `category` = 'General';--> statement-breakpoint
-- A repository is a public URL or nothing: local paths the importer once recorded are dropped.
UPDATE `catalog_skills` SET `repository` = NULL WHERE `repository` NOT LIKE 'https://%' AND `repository` NOT LIKE 'http://%';--> statement-breakpoint
UPDATE `skills` SET `repository` = NULL WHERE `source` = 'catalog' AND `repository` NOT LIKE 'https://%' AND `repository` NOT LIKE 'http://%';
