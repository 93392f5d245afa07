import { inputRequired, inputResponse, type InputRequiredResult, type ServerContext } from '@modelcontextprotocol/server';
import type { CapabilityContext } from '../capabilities/capability';
import { AppError } from '../errors';
import { GRANT_MODES } from '../../schema';
import { permissionRequestStatus, requestPermission, RequestPermissionBody } from '../services/permission-requests';
import { elicitsForms } from './client-capabilities';

const APPROVAL_KEY = /^approval-([0-9a-f-]{36})$/;

/**
 * A tool refused to an API key for a scope it lacks, called by a 2026-07-28 client that answers
 * form elicitations: the person is asked why the agent needs the scope, a permission request is
 * filed with that reason (as `POST /api/v1/agents/request-permission` files one), and the client
 * is asked to continue once the key's owner has approved it on their own signed-in page. The
 * client only relays a reason and a go-ahead, so nothing it answers grants anything: the retry
 * runs the tool only if the owner's grant now covers it. Null when the refusal stands as before:
 * not a key lacking a scope, a client that cannot ask, an answer declined, a request decided
 * against or lapsed. OAuth tokens never get here: they are challenged at the endpoint (step-up).
 */
export async function askForScope(ctx: CapabilityContext, tool: string, error: unknown, call: ServerContext): Promise<InputRequiredResult | null> {
  const scope = error instanceof AppError && error.code === 'FORBIDDEN' ? error.details?.scope : undefined;
  if (typeof scope !== 'string' || ctx.actor.credential.type !== 'api_key' || !elicitsForms(call)) return null;
  const responses = call.mcpReq.inputResponses ?? {};
  const approval = Object.keys(responses)
    .map((key) => APPROVAL_KEY.exec(key)?.[1])
    .find((id) => id !== undefined);
  if (approval !== undefined) {
    // The go-ahead came but the grant does not cover the call: ask again while the owner has not decided.
    if (inputResponse(responses, `approval-${approval}`).kind !== 'elicit') return null;
    const status = await permissionRequestStatus(ctx.globalDb, ctx.actor, approval).catch(() => null);
    return status === 'pending' ? awaitingApproval(approval, scope, `${ctx.baseUrl}/settings#agent-permission-requests`) : null;
  }
  const reasonKey = `scope-${scope}`;
  const answer = inputResponse(responses, reasonKey);
  if (answer.kind === 'missing') return inputRequired({ inputRequests: { [reasonKey]: reasonForm(tool, scope) } });
  if (answer.kind !== 'elicit' || answer.action !== 'accept') return null;
  const body = RequestPermissionBody.safeParse({ scope, reason: answer.content?.reason, mode: answer.content?.mode });
  if (!body.success) return inputRequired({ inputRequests: { [reasonKey]: reasonForm(tool, scope) } });
  const filed = await requestPermission(ctx.globalDb, ctx.actor, body.data, ctx.baseUrl);
  return filed.status === 'pending' ? awaitingApproval(filed.request_id, scope, `${filed.approval_url} (code ${filed.link_code})`) : null;
}

const MODE_TITLES: Record<(typeof GRANT_MODES)[number], string> = { persistent: 'From now on', session: 'For an hour', one_time: 'For this one call' };

/** Why the agent needs the scope, in the person's words (the owner sees them), and for how long. */
const reasonForm = (tool: string, scope: string) =>
  inputRequired.elicit({
    mode: 'form',
    message: `${tool} needs the scope "${scope}", which this API key does not hold. Ask the key's owner to grant it?`,
    requestedSchema: {
      type: 'object',
      properties: {
        reason: { type: 'string', title: 'Why the agent needs it', description: 'Shown to the person who decides', minLength: 1, maxLength: 280 },
        mode: {
          type: 'string',
          title: 'For how long',
          oneOf: GRANT_MODES.map((mode) => ({ const: mode, title: MODE_TITLES[mode] })),
          default: 'session',
        },
      },
      required: ['reason'],
    },
  });

/** The go-ahead to retry, once the owner has approved request `id` where `where` says. */
const awaitingApproval = (id: string, scope: string, where: string) =>
  inputRequired({
    inputRequests: {
      [`approval-${id}`]: inputRequired.elicit({
        mode: 'form',
        message: `The request for "${scope}" waits for the key's owner: they approve it at ${where}. Continue once it is approved.`,
        requestedSchema: { type: 'object', properties: {} },
      }),
    },
  });
