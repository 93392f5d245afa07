import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { AppEnv } from './env';
import { AppError, invalidInput } from './errors';
import { announceChanges } from './middleware/announce-changes';
import { authenticate } from './middleware/authenticate';
import { requestContext } from './middleware/request-context';
import { activate } from './routes/activate';
import { activity } from './routes/activity';
import { agentPermissions } from './routes/agent-permissions';
import { agentRoutes } from './routes/agents';
import { apiKeys } from './routes/api-keys';
import { approvalPages } from './routes/approval-pages';
import { artifactRoutes } from './routes/artifacts';
import { auditLogs } from './routes/audit-logs';
import { auth } from './routes/auth';
import { authPages } from './routes/auth-pages';
import { billing } from './routes/billing';
import { byok } from './routes/byok';
import { connectorRoutes } from './routes/connectors';
import { apiEvents, control, eventRoutes } from './routes/control';
import { executionRoutes } from './routes/executions';
import { install } from './routes/install';
import { invitations } from './routes/invitations';
import { marketplace } from './routes/marketplace';
import { mcp } from './routes/mcp';
import { memory } from './routes/memory';
import { oauth, wellKnown } from './routes/oauth';
import { openApiDocument } from './routes/openapi';
import { profile } from './routes/profile';
import { reference } from './routes/reference';
import { secretRoutes } from './routes/secrets';
import { skillSecretRoutes } from './routes/skill-secrets';
import { skills } from './routes/skills';
import { streams } from './routes/streams';
import { threadRoutes } from './routes/threads';
import { traceRoutes } from './routes/traces';
import { workflowRoutes } from './routes/workflows';
import { workspaces } from './routes/workspaces';

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Maps anything thrown to an AppError; internals are logged, never sent. */
function toAppError(error: Error, requestId: string): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof HTTPException && error.status === 400) {
    // Hono's validator throws this for a body that is not valid JSON.
    return invalidInput('body', 'json', 'The request body is not valid JSON');
  }
  console.error(JSON.stringify({ level: 'error', requestId, error: error.stack ?? String(error) }));
  return new AppError('INTERNAL_ERROR', 500, 'An unexpected error occurred');
}

export function createApp() {
  const app = new Hono<AppEnv>();

  app.use(requestContext);
  app.use(async (c, next) => {
    const max = Number(c.env.MAX_BODY_BYTES) || DEFAULT_MAX_BODY_BYTES;
    return bodyLimit({
      maxSize: max,
      onError: () => {
        throw new AppError('INVALID_INPUT', 413, `The request body exceeds ${max} bytes`, { field: 'body', rule: 'max_size', limit: max });
      },
    })(c, next);
  });
  app.use('/api/v1/*', authenticate);
  app.use('/api/v1/*', announceChanges);

  app.route('/auth', auth);
  app.route('/auth', authPages);
  app.route('/auth', oauth);
  app.route('/.well-known', wellKnown);
  app.route('/', approvalPages);
  app.route('/api/v1/profile', profile);
  app.route('/api/v1/workspaces', workspaces);
  app.route('/api/v1/invitations', invitations);
  app.route('/api/v1/api-keys', apiKeys);
  app.route('/api/v1/agents', agentPermissions);
  app.route('/api/v1/activate', activate);
  app.route('/api/v1/memory', memory);
  app.route('/api/v1/audit-logs', auditLogs);
  app.route('/api/v1/activity', activity);
  app.route('/api/v1/marketplace/skills', marketplace);
  app.route('/api/v1/skills/:slug/secrets', skillSecretRoutes);
  app.route('/api/v1/skills', skills);
  app.route('/api/v1/secrets', secretRoutes);
  app.route('/api/v1/install', install);
  app.route('/api/v1/executions', executionRoutes);
  app.route('/api/v1/artifacts', artifactRoutes);
  app.route('/api/v1/billing', billing);
  app.route('/api/v1/byok', byok);
  app.route('/api/v1/agents', agentRoutes);
  app.route('/api/v1/workflows', workflowRoutes);
  app.route('/api/v1/connectors', connectorRoutes);
  app.route('/api/v1/traces', traceRoutes);
  app.route('/api/v1/threads', threadRoutes);
  app.route('/api/v1/events', eventRoutes);
  app.route('/api/events', apiEvents);
  app.route('/control', control);
  app.route('/streams', streams);
  app.route('/', mcp);

  app.get('/api/v1/openapi.json', openApiDocument(app));
  app.route('/', reference);

  app.notFound((c) => c.json({ error: { code: 'NOT_FOUND', message: `No route for ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => {
    const appError = toAppError(error, c.var.requestId ?? '');
    return c.json(appError.toEnvelope(), appError.status);
  });
  return app;
}
