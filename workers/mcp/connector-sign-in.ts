import { inputRequired, inputResponse, type InputRequiredResult, type ServerContext } from '@modelcontextprotocol/server';
import { AppError } from '../errors';
import { elicitsUrls } from './client-capabilities';

/**
 * A tool refused because the workspace has not connected the connector it needs
 * (`CONNECTOR_NOT_CONNECTED`), called by a 2026-07-28 client that answers URL elicitations: the
 * person is sent to the console's Connectors section to connect it, so the provider's token goes
 * to the service and never through the client (what URL mode is for), and the client retries the
 * call once they are done. Null when the call is answered with the refusal as before: a client
 * that cannot open URLs, or the retry after the person was asked (declined, or still not connected).
 */
export function connectorSignIn(error: unknown, call: ServerContext, baseUrl: string): InputRequiredResult | null {
  if (!(error instanceof AppError) || error.code !== 'CONNECTOR_NOT_CONNECTED' || !elicitsUrls(call)) return null;
  const connector = typeof error.details?.connector === 'string' ? error.details.connector : 'github';
  const key = `connect-${connector}`;
  if (inputResponse(call.mcpReq.inputResponses, key).kind !== 'missing') return null;
  return inputRequired({
    inputRequests: {
      [key]: inputRequired.elicitUrl({
        url: `${baseUrl}/settings#connectors`,
        message: `This needs ${connector} connected to the workspace. Connect it in the workspace's settings (the token is given to the service there, not to this client), then continue.`,
      }),
    },
  });
}
