import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { approvalPagesRoutes } from './approval-pages';
import { mcpRoutes } from './mcp';
import { referenceRoutes } from './reference';

/** Everything at the service's root: the home page, the API reference (/docs) and the workflow schema, the approval pages (/activate, /approve) and /mcp. */
export const rootRoutes = new Hono<AppEnv>().route('/', referenceRoutes).route('/', approvalPagesRoutes).route('/', mcpRoutes);
