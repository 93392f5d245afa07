import { Hono } from 'hono';
import { HtmlDocument } from '../lib/html-document';
import type { FC } from 'hono/jsx';
import { Layout } from '../auth/pages';
import { renderPage } from '../auth/web';
import type { AppEnv } from '../env';
import { notFound } from '../errors';
import { WORKFLOW_SCHEMA_PATH, workflowDefinitionDocument } from '../workflows/definition-schema';

/**
 * What a person finds first: the home page, the API reference UI (its files come from the
 * swagger-ui-dist package through the ASSETS binding, so it works offline and under a CSP that
 * allows only this origin), and the workflow definition's JSON Schema.
 */

const OPENAPI_PATH = '/api/v1/openapi.json';

/** The reference UI's files this Worker serves; everything else in the package stays unreachable. */
const UI_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const UI_INIT = `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(OPENAPI_PATH)}, dom_id: '#reference', deepLinking: true, validatorUrl: null });\n`;

const HomePage: FC<{ nonce: string; origin: string }> = ({ nonce, origin }) => (
  <Layout title="Home" nonce={nonce}>
    <h1>Workspace AI Skills Service</h1>
    <p>
      One workspace for AI skills, multi-step workflows, agents and what they produce. Install a skill from the marketplace, run it, follow its events on a
      resumable stream, keep its files and a shared memory, chain skills into workflows with branches and human approval, and reach all of it from an MCP
      client.
    </p>
    <nav aria-label="Start here">
      <ul>
        <li>
          <a href="#quickstart">Quickstart</a>: the first run in five commands (the full walk-through is the repository's README.md)
        </li>
        <li>
          <a href="/docs">API reference</a>: every operation, browsable
        </li>
        <li>
          <a href={OPENAPI_PATH}>OpenAPI document</a>: for generating clients
        </li>
        <li>
          <a href={WORKFLOW_SCHEMA_PATH}>Workflow definition schema</a>: the JSON Schema of what a workflow install takes
        </li>
        <li>
          <a href="/auth/sign-in?next=/">Sign in</a> or <a href="/auth/sign-up?next=/">Sign up</a>
        </li>
      </ul>
    </nav>
    <h2 id="mcp">MCP endpoint</h2>
    <p>
      Point an MCP client (Streamable HTTP) at <code aria-label="MCP endpoint URL">{`${origin}/mcp`}</code> with an <code>x-api-key</code> header, or let it
      sign in with OAuth: it finds the <a href="/.well-known/oauth-protected-resource/mcp">MCP authorization metadata</a>.
    </p>
    <h2 id="quickstart">Quickstart</h2>
    <p>
      With the API key <code>npm start</code> printed (or one from <code>POST /api/v1/api-keys</code>):
    </p>
    <pre tabindex={0} aria-label="Quickstart commands">
      {`KEY=sk_live_…
curl -H "x-api-key: $KEY" ${origin}/api/v1/profile
curl -X POST -H "x-api-key: $KEY" ${origin}/api/v1/skills/meeting-notes-summarizer/install
curl -X POST -H "x-api-key: $KEY" -H 'content-type: application/json' \\
  -d '{"input":"Ana ships Friday. Ben writes the notes."}' \\
  ${origin}/api/v1/skills/meeting-notes-summarizer/run
curl -H "x-api-key: $KEY" ${origin}/api/v1/executions/<executionId>/status`}
    </pre>
  </Layout>
);

const DocsPage: FC = () => (
  <HtmlDocument title="API reference" indexable head={<link rel="stylesheet" href="/docs/assets/swagger-ui.css" />}>
    <body>
      <main id="reference" aria-label="API reference">
        <noscript>The API reference needs script. The document itself is at {OPENAPI_PATH}.</noscript>
      </main>
      <script src="/docs/assets/swagger-ui-bundle.js"></script>
      <script src="/docs/assets/init.js"></script>
    </body>
  </HtmlDocument>
);

/** The reference UI runs only this origin's scripts and talks only to this origin. */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export const referenceRoutes = new Hono<AppEnv>()
  .get('/', (c) => renderPage(c, 200, (nonce) => <HomePage nonce={nonce} origin={new URL(c.req.url).origin} />))
  .get('/docs', (c) => {
    c.header('content-security-policy', DOCS_CSP);
    c.header('x-frame-options', 'DENY');
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'same-origin');
    return c.html(<DocsPage />);
  })
  .get('/docs/assets/:file', async (c) => {
    const file = c.req.param('file');
    if (file === 'init.js') return c.body(UI_INIT, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' });
    if (!Object.hasOwn(UI_FILES, file)) throw notFound('Asset');
    const type = UI_FILES[file]!;
    const asset = await c.env.ASSETS.fetch(new URL(`/${file}`, c.req.url));
    if (!asset.ok) throw notFound('Asset');
    return new Response(asset.body, { headers: { 'content-type': type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' } });
  })
  .get(WORKFLOW_SCHEMA_PATH, (c) =>
    c.json(workflowDefinitionDocument(new URL(WORKFLOW_SCHEMA_PATH, c.req.url).href), 200, { 'cache-control': 'public, max-age=3600' }),
  );
