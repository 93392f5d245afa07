// The global database (binding DB): what spans workspaces or is found without one.
export * from './users';
export * from './workspaces';
export * from './directory';
export * from './api-keys';
export * from './oauth';
export * from './agent-permissions';
export * from './credits';
export * from './byok';
export * from './catalog';
export * from './mcp';
export * from './change-outbox';
export * from './workspace-deletions';
export * from './account-deletions';
