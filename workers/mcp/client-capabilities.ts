import { CLIENT_CAPABILITIES_META_KEY, type ClientCapabilities, type ServerContext } from '@modelcontextprotocol/server';

/** The Tasks extension's identifier, in capabilities' `extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/**
 * The capabilities a 2026-07-28 request declares in its `_meta` (each request carries its own);
 * undefined for a 2025 request, whose client declared them once at `initialize` and is offered
 * neither tasks nor input requests here.
 */
const declared = (call: ServerContext): ClientCapabilities | undefined =>
  (call.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;

/** Whether the request's client handles a task in place of a tool's result. */
export const takesTasks = (call: ServerContext): boolean => declared(call)?.extensions?.[TASKS_EXTENSION] !== undefined;

/** Whether the request's client answers form elicitations (a bare `elicitation: {}` is form mode, as in 2025). */
export function elicitsForms(call: ServerContext): boolean {
  const elicitation = declared(call)?.elicitation;
  return elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined);
}

/** Whether the request's client sends the person to a URL the server names (URL-mode elicitation). */
export const elicitsUrls = (call: ServerContext): boolean => declared(call)?.elicitation?.url !== undefined;
