import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { AuditEntry, AuditQuery, listAuditLogs } from '../services/audit';
import { cursorEnvelope, documented } from './openapi';

export const auditLogsRoutes = new Hono<AppEnv>().get(
  '/',
  documented('Audit', 'Every mutation in the workspace, newest first', 200, cursorEnvelope(AuditEntry)),
  validate('query', AuditQuery),
  async (c) => c.json(await listAuditLogs(c.var.db, principalOf(c), c.req.valid('query'))),
);
