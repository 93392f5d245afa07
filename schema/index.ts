export * from './api-keys';
export * from './idempotency';
export * from './logs';
export * from './memory';
export * from './users';
export * from './workspaces';
