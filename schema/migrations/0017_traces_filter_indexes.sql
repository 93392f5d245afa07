CREATE INDEX `traces_workspace_kind_idx` ON `traces` (`workspace_id`,`kind`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_status_idx` ON `traces` (`workspace_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_agent_idx` ON `traces` (`workspace_id`,`actor_agent_slug`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_api_key_idx` ON `traces` (`workspace_id`,`actor_api_key_id`,`id`);