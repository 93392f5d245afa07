import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { AppEnv } from './env';
import { AppError, invalidInput, retryAfterHeader } from './errors';
import { announceChanges } from './middleware/announce-changes';
import { authenticate } from './middleware/authenticate';
import { cookieSession } from './middleware/cookie-session';
import { readBody } from './middleware/body';
import { apiCors, urlCredentialCors } from './middleware/cors';
import { requestContext } from './middleware/request-context';
import { activateRoutes } from './routes/activate';
import { activityRoutes } from './routes/activity';
import { agentsRoutes } from './routes/agents';
import { apiKeysRoutes } from './routes/api-keys';
import { artifactsRoutes } from './routes/artifacts';
import { auditLogsRoutes } from './routes/audit-logs';
import { authRoutes } from './routes/auth';
import { billingRoutes } from './routes/billing';
import { byokRoutes } from './routes/byok';
import { connectorsRoutes } from './routes/connectors';
import { apiEventsRoutes, controlRoutes, eventsRoutes } from './routes/control';
import { executionsRoutes } from './routes/executions';
import { installRoutes } from './routes/install';
import { invitationsRoutes } from './routes/invitations';
import { marketplaceRoutes } from './routes/marketplace';
import { memoryRoutes } from './routes/memory';
import { wellKnownRoutes } from './routes/oauth';
import { profileRoutes } from './routes/profile';
import { rootRoutes } from './routes/root';
import { secretsRoutes } from './routes/secrets';
import { skillSecretsRoutes } from './routes/skill-secrets';
import { skillsRoutes } from './routes/skills';
import { streamsRoutes } from './routes/streams';
import { threadsRoutes } from './routes/threads';
import { tracesRoutes } from './routes/traces';
import { workflowsRoutes } from './routes/workflows';
import { workspacesRoutes } from './routes/workspaces';
import { openApiDocument } from './routes/openapi';

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

  // First: a preflight carries no credential, and every refusal after it must be readable cross-origin.
  app.use('/api/v1/*', apiCors);
  app.use('/api/events', urlCredentialCors);
  app.use('/streams/*', urlCredentialCors);
  app.use(requestContext);
  app.use(readBody);
  app.use('/api/v1/*', cookieSession);
  app.use('/api/v1/*', authenticate);
  app.use('/api/v1/*', announceChanges);

  // One router per mount path, each named <what it serves>Routes; a path served by several
  // files is composed by the router named for it (authRoutes, agentsRoutes, rootRoutes).
  app.route('/auth', authRoutes);
  app.route('/.well-known', wellKnownRoutes);
  app.route('/', rootRoutes);
  app.route('/api/v1/profile', profileRoutes);
  app.route('/api/v1/workspaces', workspacesRoutes);
  app.route('/api/v1/invitations', invitationsRoutes);
  app.route('/api/v1/api-keys', apiKeysRoutes);
  app.route('/api/v1/agents', agentsRoutes);
  app.route('/api/v1/activate', activateRoutes);
  app.route('/api/v1/memory', memoryRoutes);
  app.route('/api/v1/audit-logs', auditLogsRoutes);
  app.route('/api/v1/activity', activityRoutes);
  app.route('/api/v1/marketplace/skills', marketplaceRoutes);
  app.route('/api/v1/skills/:slug/secrets', skillSecretsRoutes);
  app.route('/api/v1/skills', skillsRoutes);
  app.route('/api/v1/secrets', secretsRoutes);
  app.route('/api/v1/install', installRoutes);
  app.route('/api/v1/executions', executionsRoutes);
  app.route('/api/v1/artifacts', artifactsRoutes);
  app.route('/api/v1/billing', billingRoutes);
  app.route('/api/v1/byok', byokRoutes);
  app.route('/api/v1/workflows', workflowsRoutes);
  app.route('/api/v1/connectors', connectorsRoutes);
  app.route('/api/v1/traces', tracesRoutes);
  app.route('/api/v1/threads', threadsRoutes);
  app.route('/api/v1/events', eventsRoutes);
  app.route('/api/events', apiEventsRoutes);
  app.route('/control', controlRoutes);
  app.route('/streams', streamsRoutes);

  app.get('/api/v1/openapi.json', openApiDocument(app));

  app.notFound((c) => c.json({ error: { code: 'NOT_FOUND', message: `No route for ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => {
    const appError = toAppError(error, c.var.requestId ?? '');
    return c.json(appError.toEnvelope(), appError.status, retryAfterHeader(appError));
  });
  return app;
}
