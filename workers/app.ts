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
import { AREAS } from './capabilities';
import { billingArea } from './capabilities/billing';
import { mountAreas } from './capabilities/rest';
import { workflowsArea } from './capabilities/workflows';
import { authRoutes } from './routes/auth';
import { stripeRoutes } from './routes/billing';
import { apiEventsRoutes, controlRoutes } from './routes/control';
import { wellKnownRoutes } from './routes/oauth';
import { rootRoutes } from './routes/root';
import { downloadsRoutes } from './routes/downloads';
import { streamsRoutes } from './routes/streams';
import { workflowStreamsRoutes } from './routes/workflows';
import { openApiRoutes } from './routes/openapi';
import { operatorRoutes } from './routes/operator';
import { triggerRoutes } from './routes/triggers';
import { TRIGGER_PATH } from './services/workflow-triggers';

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
  app.use('/downloads/*', urlCredentialCors);
  app.use(requestContext);
  app.use(readBody);
  app.use('/api/v1/*', cookieSession);
  app.use('/api/v1/*', authenticate);
  app.use('/api/v1/*', announceChanges);

  // Routes written by hand (pages, protocol endpoints) are named <what they serve>Routes; a
  // path served by several files is composed by the router named for it (authRoutes, rootRoutes).
  app.route('/auth', authRoutes);
  app.route('/.well-known', wellKnownRoutes);
  app.route('/', rootRoutes);
  // Every operation's route, at the mount path its area declares (workers/capabilities/).
  mountAreas(app, AREAS);
  // Endpoints written by hand under an area's path, after its operations.
  app.route(billingArea.mount, stripeRoutes);
  app.route(workflowsArea.mount, workflowStreamsRoutes);
  app.route('/api/events', apiEventsRoutes);
  app.route('/control', controlRoutes);
  app.route('/streams', streamsRoutes);
  app.route('/downloads', downloadsRoutes);
  app.route('/operator', operatorRoutes);
  app.route(TRIGGER_PATH, triggerRoutes);

  app.route('/api/v1', openApiRoutes(app));

  app.notFound((c) => c.json({ error: { code: 'NOT_FOUND', message: `No route for ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => {
    const appError = toAppError(error, c.var.requestId ?? '');
    return c.json(appError.toEnvelope(), appError.status, retryAfterHeader(appError));
  });
  return app;
}
