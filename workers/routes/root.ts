import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { approvalPagesRoutes } from './approval-pages';
import { consoleRoutes } from './console';
import { mcpRoutes } from './mcp';
import { referenceRoutes } from './reference';

/** Everything at the service's root: the console (signed in) or the home page, the API reference (/docs) and the workflow schema, the approval pages (/activate, /approve) and /mcp. */
export const rootRoutes = new Hono<AppEnv>().route('/', consoleRoutes).route('/', referenceRoutes).route('/', approvalPagesRoutes).route('/', mcpRoutes);
