CREATE TABLE `shard_identity` (
	`only` integer PRIMARY KEY NOT NULL,
	`shard` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `skill_evals` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`skill_id` integer NOT NULL,
	`skill_slug` text NOT NULL,
	`skill_version_id` integer NOT NULL,
	`version_number` integer NOT NULL,
	`user_id` text NOT NULL,
	`status` text NOT NULL,
	`stop_reason` text,
	`provider` text NOT NULL,
	`model` text NOT NULL,
	`repetitions` integer NOT NULL,
	`budget` integer,
	`cases_count` integer NOT NULL,
	`cases_checksum` text NOT NULL,
	`pass_rate_with` real,
	`pass_rate_without` real,
	`cost` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`elapsed_ms` integer DEFAULT 0 NOT NULL,
	`report` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`skill_id`) REFERENCES `skills`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `skill_evals_skill_idx` ON `skill_evals` (`workspace_id`,`skill_id`,`id`);--> statement-breakpoint
CREATE INDEX `skill_evals_version_idx` ON `skill_evals` (`skill_version_id`,`id`);--> statement-breakpoint
CREATE TABLE `artifacts` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`execution_id` integer,
	`name` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`r2_key` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `artifacts_workspace_idx` ON `artifacts` (`workspace_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `artifacts_r2_key_unique` ON `artifacts` (`r2_key`);--> statement-breakpoint
CREATE TABLE `executions` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`user_id` text NOT NULL,
	`skill_slug` text NOT NULL,
	`skill_name` text DEFAULT '' NOT NULL,
	`skill_version_id` integer,
	`status` text NOT NULL,
	`input_text` text DEFAULT '' NOT NULL,
	`source` text DEFAULT 'api' NOT NULL,
	`interface` text DEFAULT 'api' NOT NULL,
	`cost` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`parent_execution_id` integer,
	`trace_key` text DEFAULT '' NOT NULL,
	`started_at` integer NOT NULL,
	`completed_at` integer,
	`execution_time_ms` integer DEFAULT 0 NOT NULL,
	`turn_key` text,
	`claimed_at` integer,
	`turn_allowance` integer DEFAULT 0 NOT NULL,
	`budget` integer,
	`eval_id` integer,
	`eval_role` text
);
--> statement-breakpoint
CREATE INDEX `executions_workspace_status_idx` ON `executions` (`workspace_id`,`status`);--> statement-breakpoint
CREATE INDEX `executions_workspace_ended_idx` ON `executions` (`workspace_id`,CASE WHEN "completed_at" IS NOT NULL THEN "completed_at" WHEN "claimed_at" IS NOT NULL THEN "claimed_at" ELSE "started_at" END) WHERE "executions"."status" <> 'working';--> statement-breakpoint
CREATE INDEX `executions_working_claimed_idx` ON `executions` (`claimed_at`) WHERE "executions"."status" = 'working';--> statement-breakpoint
CREATE TABLE `run_tool_calls` (
	`key` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `workspace_exports` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`status` text NOT NULL,
	`requested_by` text NOT NULL,
	`lease_until` integer,
	`r2_key` text,
	`size` integer,
	`error` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	`expires_at` integer
);
--> statement-breakpoint
CREATE INDEX `workspace_exports_workspace_idx` ON `workspace_exports` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `workspace_exports_status_lease_idx` ON `workspace_exports` (`status`,`lease_until`);--> statement-breakpoint
CREATE INDEX `workspace_exports_expires_idx` ON `workspace_exports` (`expires_at`);--> statement-breakpoint
CREATE TABLE `connector_connections` (
	`workspace_id` text NOT NULL,
	`connector_type` text NOT NULL,
	`ciphertext` text NOT NULL,
	`token_preview` text NOT NULL,
	`account` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `connector_type`)
);
--> statement-breakpoint
CREATE TABLE `execution_connectors` (
	`execution_id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connector_type` text NOT NULL,
	`repo` text,
	FOREIGN KEY (`execution_id`) REFERENCES `executions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `idempotency_records` (
	`workspace_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`status` integer,
	`body` text,
	`content_type` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `activity_log` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`actor_user_id` text NOT NULL,
	`actor_api_key_id` integer,
	`type` text NOT NULL,
	`summary` text NOT NULL,
	`resource_type` text NOT NULL,
	`resource_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `activity_workspace_idx` ON `activity_log` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `activity_workspace_created_idx` ON `activity_log` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`actor_user_id` text NOT NULL,
	`actor_api_key_id` integer,
	`action` text NOT NULL,
	`resource_type` text NOT NULL,
	`resource_id` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`request_id` text NOT NULL,
	`metadata` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_workspace_idx` ON `audit_log` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_workspace_action_idx` ON `audit_log` (`workspace_id`,`action`,`id`);--> statement-breakpoint
CREATE INDEX `audit_workspace_created_idx` ON `audit_log` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `memory` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`content` text NOT NULL,
	`updated_by` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `workspace_placement` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`shard` integer NOT NULL,
	`fenced` integer DEFAULT false NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `retention_windows` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`executions_days` integer,
	`traces_days` integer,
	`workflow_runs_days` integer,
	`activity_days` integer,
	`audit_days` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `secrets` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`ciphertext` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `secrets_workspace_name_idx` ON `secrets` (`workspace_id`,`name`);--> statement-breakpoint
CREATE TABLE `skill_secret_bindings` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`skill_id` integer NOT NULL,
	`secret_id` integer NOT NULL,
	`env_var` text NOT NULL,
	`origins` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`skill_id`) REFERENCES `skills`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`secret_id`) REFERENCES `secrets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bindings_skill_env_idx` ON `skill_secret_bindings` (`skill_id`,`env_var`);--> statement-breakpoint
CREATE TABLE `skill_guard_settings` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`enabled` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `skill_version_guards` (
	`skill_version_id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`previous_version_number` integer NOT NULL,
	`status` text NOT NULL,
	`eval_id` integer NOT NULL,
	`baseline_eval_id` integer NOT NULL,
	`pass_rate` real,
	`required` real,
	`note` text,
	`decided_at` integer,
	FOREIGN KEY (`skill_version_id`) REFERENCES `skill_versions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `skill_version_guards_status_idx` ON `skill_version_guards` (`workspace_id`,`status`);--> statement-breakpoint
CREATE TABLE `skill_versions` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`skill_id` integer NOT NULL,
	`version_number` integer NOT NULL,
	`source` text NOT NULL,
	`repository` text,
	`commit_hash` text,
	`content_checksum` text NOT NULL,
	`storage_path` text NOT NULL,
	`bundle_type` text NOT NULL,
	`files_count` integer NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL,
	`category` text NOT NULL,
	`prompt` text NOT NULL,
	`created_by` text NOT NULL,
	`note` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`skill_id`) REFERENCES `skills`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `skill_versions_number_idx` ON `skill_versions` (`skill_id`,`version_number`);--> statement-breakpoint
CREATE TABLE `skills` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`active_version_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `skills_workspace_slug_idx` ON `skills` (`workspace_id`,`slug`);--> statement-breakpoint
CREATE TABLE `spend_limits` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`monthly` integer,
	`daily` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `workspace_spend` (
	`workspace_id` text NOT NULL,
	`period` text NOT NULL,
	`spent` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `period`)
);
--> statement-breakpoint
CREATE TABLE `thread_messages` (
	`id` integer PRIMARY KEY NOT NULL,
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
	`updated_at` integer NOT NULL
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
	`last_activity_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `traces_workspace_key_idx` ON `traces` (`workspace_id`,`trace_key`);--> statement-breakpoint
CREATE INDEX `traces_workspace_id_idx` ON `traces` (`workspace_id`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_kind_idx` ON `traces` (`workspace_id`,`kind`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_status_idx` ON `traces` (`workspace_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_agent_idx` ON `traces` (`workspace_id`,`actor_agent_slug`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_api_key_idx` ON `traces` (`workspace_id`,`actor_api_key_id`,`id`);--> statement-breakpoint
CREATE INDEX `traces_workspace_last_activity_idx` ON `traces` (`workspace_id`,`last_activity_at`);--> statement-breakpoint
CREATE TABLE `agents` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`instructions` text NOT NULL,
	`model` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agents_workspace_slug_idx` ON `agents` (`workspace_id`,`slug`);--> statement-breakpoint
CREATE TABLE `trigger_deliveries` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`trigger_id` text NOT NULL,
	`delivery_id` text,
	`event` text,
	`outcome` text NOT NULL,
	`status` integer NOT NULL,
	`run_id` text,
	`reason` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`trigger_id`) REFERENCES `workflow_triggers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `trigger_deliveries_trigger_idx` ON `trigger_deliveries` (`trigger_id`,`id`);--> statement-breakpoint
CREATE INDEX `trigger_deliveries_workspace_created_idx` ON `trigger_deliveries` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `workflow_runs` (
	`run_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`workflow_id` text NOT NULL,
	`status` text NOT NULL,
	`resource_id` text NOT NULL,
	`snapshot` text NOT NULL,
	`version` integer NOT NULL,
	`thread_id` text,
	`rerun_of` text,
	`rerun_from_step` text,
	`concurrency_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workflow_runs_workspace_created_idx` ON `workflow_runs` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `workflow_runs_workspace_status_idx` ON `workflow_runs` (`workspace_id`,`status`);--> statement-breakpoint
CREATE INDEX `workflow_runs_workspace_updated_idx` ON `workflow_runs` (`workspace_id`,`updated_at`);--> statement-breakpoint
CREATE INDEX `workflow_runs_concurrency_idx` ON `workflow_runs` (`workspace_id`,`workflow_id`,`concurrency_key`,`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `workflow_schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`workflow_slug` text NOT NULL,
	`cron` text NOT NULL,
	`timezone` text NOT NULL,
	`input` text NOT NULL,
	`overlap` text NOT NULL,
	`catch_up` text NOT NULL,
	`state` text NOT NULL,
	`stopped_reason` text,
	`actor_user_id` text NOT NULL,
	`actor_credential_type` text NOT NULL,
	`actor_api_key_id` integer,
	`last_fire` text,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workflow_schedules_workspace_workflow_idx` ON `workflow_schedules` (`workspace_id`,`workflow_slug`);--> statement-breakpoint
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
CREATE TABLE `workflow_triggers` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`workflow_slug` text NOT NULL,
	`name` text,
	`source` text NOT NULL,
	`auth` text NOT NULL,
	`events` text,
	`repository` text,
	`secret` text NOT NULL,
	`state` text NOT NULL,
	`stopped_reason` text,
	`actor_user_id` text NOT NULL,
	`actor` text NOT NULL,
	`last_delivery_at` integer,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workflow_triggers_workspace_workflow_idx` ON `workflow_triggers` (`workspace_id`,`workflow_slug`);--> statement-breakpoint
CREATE TABLE `workflows` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`declared_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`category` text DEFAULT '' NOT NULL,
	`requires_connector` text,
	`definition` text NOT NULL,
	`storage_path` text NOT NULL,
	`installed_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workflows_workspace_slug_idx` ON `workflows` (`workspace_id`,`slug`);--> statement-breakpoint
CREATE INDEX `workflows_workspace_declared_idx` ON `workflows` (`workspace_id`,`declared_id`);--> statement-breakpoint
CREATE TABLE `webhook_attempts` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`delivery_id` integer NOT NULL,
	`attempt` integer NOT NULL,
	`status_code` integer,
	`latency_ms` integer NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`delivery_id`) REFERENCES `webhook_deliveries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_delivery_idx` ON `webhook_attempts` (`delivery_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`endpoint_id` integer NOT NULL,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`claimed_at` integer,
	`next_attempt_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_endpoint_event_idx` ON `webhook_deliveries` (`endpoint_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint_idx` ON `webhook_deliveries` (`endpoint_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` integer PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`description` text,
	`enabled` integer NOT NULL,
	`disabled_reason` text,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_expires_at` integer,
	`failing_since` integer,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_workspace_idx` ON `webhook_endpoints` (`workspace_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhook_outbox` (
	`event_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`event` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_outbox_created_idx` ON `webhook_outbox` (`created_at`);--> statement-breakpoint
CREATE TABLE `telemetry_destinations` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`endpoint` text NOT NULL,
	`header_names` text NOT NULL,
	`headers` text NOT NULL,
	`exported` integer DEFAULT 0 NOT NULL,
	`dropped` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`last_error_at` integer,
	`updated_at` integer NOT NULL
);
