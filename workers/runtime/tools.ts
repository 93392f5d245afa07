import { z } from 'zod';
import type { TurnInput } from '../services/execution-events';
import type { ShardDb, Env } from '../env';
import { OUTBOUND_TIMEOUT_MS, outboundUrl, readTextPrefix } from '../lib/outbound';
import { saveArtifact } from '../services/execution-runs';
import { toolCallKey } from '../services/run-tool-calls';
import type { RunSecret } from '../services/skill-secrets';
import type { AgentTool } from './agent-loop';
import { capabilityRunTools } from './capability-tools';
import { redactSecrets, refuseSecretsIn, resolveSecrets, withoutPartialValue } from './run-secrets';
import { ownTool } from './tool-arguments';
import { failed } from './tool-errors';

/** What http_request hands back to the model: enough for an API answer, small for the context. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const INVALID_ARTIFACT = 'Invalid artifact name or content';

const WriteArtifactArgs = z.object({
  name: z.string().describe('A plain file name, e.g. notes.md'),
  content: z.string(),
});

const HttpRequestArgs = z.object({
  url: z.string().describe('An https URL'),
  // Models write the method in either case.
  method: z.preprocess((method) => (typeof method === 'string' ? method.toUpperCase() : method), z.enum(HTTP_METHODS)).default('GET'),
  headers: z.record(z.string(), z.string()).default({}),
  body: z.string().optional(),
});

/**
 * One HTTP request on the run's behalf. A secret goes only in a header value, written `${NAME}`,
 * and only to an origin its binding names: the origin of the URL as the model wrote it, which
 * holds no secret. Anything else is refused before a byte is sent. Redirects are not followed,
 * so a credential in a header never travels to a host the model did not name; the answer
 * (status and at most MAX_RESPONSE_BYTES of body) comes back masked.
 */
async function httpRequest(
  { url: written, method, headers: writtenHeaders, body: writtenBody }: z.output<typeof HttpRequestArgs>,
  secrets: readonly RunSecret[],
  env: Env,
) {
  refuseSecretsIn(written, 'url', secrets);
  const url = outboundUrl(written, 'url', env);
  const body = method === 'GET' ? undefined : writtenBody;
  if (body !== undefined) refuseSecretsIn(body, 'body', secrets);
  const headers = Object.fromEntries(Object.entries(writtenHeaders).map(([k, v]) => [k, resolveSecrets(v, url.origin, secrets)]));
  let response: Response;
  try {
    response = await fetch(url, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS) });
  } catch {
    return { content: `${written} could not be reached`, isError: true };
  }
  const { text, truncated } = await readTextPrefix(response.body, MAX_RESPONSE_BYTES);
  const location = response.headers.get('location');
  const head = `HTTP ${response.status}${location ? `\nLocation: ${location}` : ''}`;
  const masked = redactSecrets(`${head}\n\n${text}`, secrets);
  return { content: truncated ? `${withoutPartialValue(masked, secrets)}\n[truncated]` : masked, isError: response.status >= 400 };
}

/**
 * The tools every run offers the model: write an artifact, the capabilities' agent-run views
 * offered to every run (read and append working memory), and call an HTTP API with the skill's
 * bound secrets (each in a header, to the sites it is bound to). The capabilities act on the
 * workspace, so each passes its own access check for the run's actor; the artifact and the HTTP
 * request are the run's own work, which starting it allowed.
 */
export function runTools(db: ShardDb, env: Env, turn: TurnInput, secrets: readonly RunSecret[] = []): AgentTool[] {
  return [
    ownTool({
      name: 'write_artifact',
      description: 'Save a file (Markdown or text) as an artifact of this execution.',
      displayName: 'Write artifact',
      args: WriteArtifactArgs,
      invalid: { name: INVALID_ARTIFACT, content: INVALID_ARTIFACT },
      label: (args) => String(args.name ?? 'file'),
      run: async ({ name, content }, call) => {
        const saved = await saveArtifact(db, env.BUCKET, turn, name, redactSecrets(content, secrets), await toolCallKey(turn.turnKey, call));
        return saved ? { content: `Saved ${saved}` } : { content: INVALID_ARTIFACT, isError: true };
      },
    }),
    ...capabilityRunTools(db, env, turn, 'all'),
    ownTool({
      name: 'http_request',
      description:
        'Send an HTTP request (https) and read the answer. Write a bound secret as ${NAME} in a header value; it is filled in when the request is sent, only to a site the secret is bound to. A secret in the url or the body, or for another site, is refused.',
      displayName: 'HTTP request',
      args: HttpRequestArgs,
      invalid: { url: 'url is not a URL', method: `method must be one of ${HTTP_METHODS.join(', ')}` },
      // The label shows what the model wrote, placeholders and all: never a resolved value.
      label: (args) => `${String(args.method ?? 'GET').toUpperCase()} ${String(args.url ?? '')}`.slice(0, 200),
      run: (args) => httpRequest(args, secrets, env).catch((error) => failed(error)),
    }),
  ];
}
