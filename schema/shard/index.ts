// A shard database (bindings SHARD_<n>): everything that belongs to one workspace.
export * from './columns';
export * from './evals';
export * from './executions';
export * from './exports';
export * from './connectors';
export * from './idempotency';
export * from './logs';
export * from './memory';
export * from './retention';
export * from './secrets';
export * from './skill-guard';
export * from './skills';
export * from './spend';
export * from './traces';
export * from './workflows';
export * from './webhooks';
export * from './telemetry';
