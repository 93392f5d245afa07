import type { TurnInput } from '../services/execution-events';
import type { Actor } from '../auth/actor';
import { authorizeRoute } from '../auth/route-scopes';
import { CAPABILITIES } from '../capabilities';
import type { Db, Env } from '../env';
import { OUTBOUND_TIMEOUT_MS, outboundUrl, readTextPrefix } from '../lib/outbound';
import { saveArtifact } from '../services/execution-runs';
import { toolCallKey } from '../services/run-tool-calls';
import type { RunSecret } from '../services/skill-secrets';
import type { AgentTool } from './agent-loop';
import { capabilityAgentTool, runContext } from './capability-tools';
import { redactSecrets, refuseSecretsIn, resolveSecrets, withoutPartialValue } from './run-secrets';
import { failed } from './tool-errors';

/** What http_request hands back to the model: enough for an API answer, small for the context. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * A tool that does what the REST route `route` does, run only when the run's actor passes that
 * route's check: a run does nothing its launcher could not. A refusal is the model's tool error.
 */
export const actingAs =
  (db: Db, actor: Actor, route: string, run: AgentTool['run']): AgentTool['run'] =>
  async (args, call) => {
    try {
      await authorizeRoute(db, actor, route);
    } catch (error) {
      return failed(error);
    }
    return run(args, call);
  };

const stringRecord = (value: unknown): Record<string, string> =>
  value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)])) : {};

/**
 * One HTTP request on the run's behalf. A secret goes only in a header value, written `${NAME}`,
 * and only to an origin its binding names: the origin of the URL as the model wrote it, which
 * holds no secret. Anything else is refused before a byte is sent. Redirects are not followed,
 * so a credential in a header never travels to a host the model did not name; the answer
 * (status and at most MAX_RESPONSE_BYTES of body) comes back masked.
 */
async function httpRequest(args: Record<string, unknown>, secrets: readonly RunSecret[], env: Env) {
  const method = String(args.method ?? 'GET').toUpperCase();
  if (!(HTTP_METHODS as readonly string[]).includes(method)) return { content: `method must be one of ${HTTP_METHODS.join(', ')}`, isError: true };
  const written = String(args.url ?? '');
  refuseSecretsIn(written, 'url', secrets);
  const url = outboundUrl(written, 'url', env);
  const body = args.body === undefined || method === 'GET' ? undefined : String(args.body);
  if (body !== undefined) refuseSecretsIn(body, 'body', secrets);
  const headers = Object.fromEntries(Object.entries(stringRecord(args.headers)).map(([k, v]) => [k, resolveSecrets(v, url.origin, secrets)]));
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
 * (read and append working memory), and call an HTTP API with the skill's bound secrets (each in
 * a header, to the sites it is bound to). The capabilities act on the workspace, so each passes
 * its own access check for the run's actor; the artifact and the HTTP request are the run's own
 * work, which starting it allowed.
 */
export function runTools(db: Db, env: Env, turn: TurnInput, secrets: readonly RunSecret[] = []): AgentTool[] {
  const contextOf = async (call?: { id: string }) =>
    runContext(db, env, turn.actor, turn.requestId, turn.source ?? 'api', await toolCallKey(turn.turnKey, call));
  return [
    {
      spec: {
        name: 'write_artifact',
        description: 'Save a file (Markdown or text) as an artifact of this execution.',
        inputSchema: {
          type: 'object',
          properties: { name: { type: 'string', description: 'A plain file name, e.g. notes.md' }, content: { type: 'string' } },
          required: ['name', 'content'],
        },
      },
      displayName: 'Write artifact',
      label: (args) => String(args.name ?? 'file'),
      run: async (args, call) => {
        const content = redactSecrets(String(args.content ?? ''), secrets);
        const saved = await saveArtifact(db, env.BUCKET, turn, String(args.name ?? ''), content, await toolCallKey(turn.turnKey, call));
        return saved ? { content: `Saved ${saved}` } : { content: 'Invalid artifact name or content', isError: true };
      },
    },
    ...CAPABILITIES.filter((capability) => capability.agentTool).map((capability) => capabilityAgentTool(capability, contextOf)),
    {
      spec: {
        name: 'http_request',
        description:
          'Send an HTTP request (https) and read the answer. Write a bound secret as ${NAME} in a header value; it is filled in when the request is sent, only to a site the secret is bound to. A secret in the url or the body, or for another site, is refused.',
        inputSchema: {
          type: 'object',
          properties: {
            url: { type: 'string', description: 'An https URL' },
            method: { type: 'string', enum: [...HTTP_METHODS] },
            headers: { type: 'object', additionalProperties: { type: 'string' } },
            body: { type: 'string' },
          },
          required: ['url'],
        },
      },
      displayName: 'HTTP request',
      // The label shows what the model wrote, placeholders and all: never a resolved value.
      label: (args) => `${String(args.method ?? 'GET').toUpperCase()} ${String(args.url ?? '')}`.slice(0, 200),
      run: (args) => httpRequest(args, secrets, env).catch((error) => failed(error)),
    },
  ];
}
