import { Hono, type Context, type Next } from 'hono';
import { csrfToken, newNonce, pagePrincipal, pageSecurityHeaders, signInThenReturn } from '../auth/web';
import { CONSOLE_ASSETS } from '../console/assets.generated';
import { CONSOLE_ASSET_PATH, ConsoleShell, type ShellProps } from '../console/shell';
import type { AppEnv } from '../env';
import { notFound } from '../errors';

type Ctx = Context<AppEnv>;

/**
 * The console's policy: its one script by nonce (no inline script, no handlers in markup), its
 * stylesheet and API calls, the signed stream and the control-plane socket from this origin only.
 */
const consoleCsp = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;

/** A console page for the signed-in person; anyone else is sent to sign in and brought back. */
async function consolePage(c: Ctx, page: Omit<ShellProps, 'nonce' | 'csrf'>) {
  if (!(await pagePrincipal(c))) return signInThenReturn(c, c.req.path);
  const nonce = newNonce();
  const csrf = csrfToken(c);
  pageSecurityHeaders(c, consoleCsp(nonce));
  return c.html(<ConsoleShell nonce={nonce} csrf={csrf} {...page} />);
}

/** `/` is the console for a signed-in person; for anyone else the landing page answers (next route). */
async function homeOrLanding(c: Ctx, next: Next) {
  if (!(await pagePrincipal(c))) return next();
  return consolePage(c, { section: 'Home', title: 'Home', view: 'home' });
}

/**
 * The console's pages (each a frame the console script fills from /api/v1) and its files,
 * fingerprinted by content and so cacheable for good.
 */
export const consoleRoutes = new Hono<AppEnv>()
  .get('/', homeOrLanding)
  .get('/marketplace', (c) => consolePage(c, { section: 'Marketplace', title: 'Marketplace', view: 'marketplace' }))
  .get('/marketplace/:slug', (c) => consolePage(c, { section: 'Marketplace', title: 'Skill', view: 'marketplace-skill', item: c.req.param('slug') }))
  .get('/skills', (c) => consolePage(c, { section: 'Skills', title: 'Skills', view: 'skills' }))
  .get('/skills/:slug', (c) => consolePage(c, { section: 'Skills', title: 'Skill', view: 'skill', item: c.req.param('slug') }))
  .get('/skills/:slug/run', (c) => consolePage(c, { section: 'Skills', title: 'Run a skill', view: 'run-skill', item: c.req.param('slug') }))
  .get('/runs', (c) => consolePage(c, { section: 'Runs', title: 'Runs', view: 'runs' }))
  .get('/runs/:id', (c) => consolePage(c, { section: 'Runs', title: 'Run', view: 'run', item: c.req.param('id') }))
  .get('/workflows', (c) => consolePage(c, { section: 'Workflows', title: 'Workflows', view: 'workflows' }))
  .get('/workflows/runs/:runId', (c) => consolePage(c, { section: 'Workflows', title: 'Workflow run', view: 'workflow-run', item: c.req.param('runId') }))
  .get('/workflows/:slug', (c) => consolePage(c, { section: 'Workflows', title: 'Workflow', view: 'workflow', item: c.req.param('slug') }))
  .get('/traces', (c) => consolePage(c, { section: 'Traces', title: 'Traces', view: 'traces' }))
  .get('/traces/:id', (c) => consolePage(c, { section: 'Traces', title: 'Trace', view: 'trace', item: c.req.param('id') }))
  .get('/memory', (c) => consolePage(c, { section: 'Memory', title: 'Memory', view: 'memory' }))
  .get('/settings', (c) => consolePage(c, { section: 'Settings', title: 'Settings', view: 'settings' }))
  .get(`${CONSOLE_ASSET_PATH}/:file`, (c) => {
    const file = c.req.param('file');
    // Own entries only: `constructor` or `__proto__` must not find Object.prototype's.
    if (!Object.hasOwn(CONSOLE_ASSETS, file)) throw notFound('Asset');
    const asset = CONSOLE_ASSETS[file]!;
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
  });
