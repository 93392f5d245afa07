CREATE TABLE `byok_keys` (
	`user_id` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`ciphertext` text NOT NULL,
	`key_preview` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
