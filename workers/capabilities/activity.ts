import { cursorEnvelope } from '../lib/pagination';
import { ActivityEntry, ActivityQuery, AuditEntry, AuditQuery, listActivity, listAuditLogs } from '../services/audit';
import { defineCapability, READ_ONLY, type Area } from './capability';

/** Every mutation in the workspace, as recorded in the same batch as the change. */
export const auditLogsArea: Area = {
  mount: '/api/v1/audit-logs',
  tag: 'Audit',
  capabilities: [
    defineCapability({
      name: 'list-audit-logs',
      title: 'List the audit log',
      description: 'Every mutation in the workspace, newest first.',
      access: { auth: 'credential', scope: 'activity:read' },
      input: AuditQuery,
      output: cursorEnvelope(AuditEntry),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listAuditLogs(ctx.db, ctx.globalDb, ctx.actor, query),
    }),
  ],
};

/** The changes people follow (members, keys, memory, workspaces, secrets). */
export const activityArea: Area = {
  mount: '/api/v1/activity',
  tag: 'Activity',
  capabilities: [
    defineCapability({
      name: 'list-activity',
      title: 'List activity',
      description: 'The workspace change log, newest first.',
      access: { auth: 'credential', scope: 'activity:read' },
      input: ActivityQuery,
      output: cursorEnvelope(ActivityEntry),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listActivity(ctx.db, ctx.globalDb, ctx.actor, query),
    }),
  ],
};
