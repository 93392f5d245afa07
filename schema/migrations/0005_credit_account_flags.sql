ALTER TABLE `credit_accounts` ADD `site_license` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `credit_accounts` ADD `subscription_expires_at` integer;