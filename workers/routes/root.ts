import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { approvalPagesRoutes } from './approval-pages';
import { mcpRoutes } from './mcp';

/** Everything at the service's root: the approval pages (/activate, /approve) and /mcp. */
export const rootRoutes = new Hono<AppEnv>().route('/', approvalPagesRoutes).route('/', mcpRoutes);
