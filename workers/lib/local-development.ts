/**
 * `LOCAL_DEVELOPMENT=true` opens what only a developer's own machine may reach: http and
 * loopback or private addresses for URLs that users and clients supply, and browser pages on
 * loopback origins calling /mcp. Tests and `npm start -- --var LOCAL_DEVELOPMENT:true` set it;
 * `npm run deploy` refuses a configuration that does.
 */
export const isLocalDevelopment = (env: { LOCAL_DEVELOPMENT?: string }): boolean => env.LOCAL_DEVELOPMENT === 'true';
