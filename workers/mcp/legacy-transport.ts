import { WebStandardStreamableHTTPServerTransport, type JSONRPCMessage, type TransportSendOptions } from '@modelcontextprotocol/server';

/** The 2025 revisions' "resource not found" (server/resources, 2025-06-18 and 2025-11-25). */
const RESOURCE_NOT_FOUND_2025 = -32002;

/** The SDK's resource-not-found shape: `-32602` whose data is exactly `{uri}`. */
const isResourceNotFound = (message: JSONRPCMessage) =>
  'error' in message &&
  message.error.code === -32602 &&
  typeof message.error.data === 'object' &&
  message.error.data !== null &&
  Object.keys(message.error.data).join() === 'uri';

/**
 * The stateless Streamable HTTP transport for 2025-era clients (no session; JSON answers unless
 * `json` is false). The SDK 2.x sends resource-not-found as `-32602` on every revision; the 2025
 * revisions name it `-32002`, which these clients were always answered with, so it is put back.
 */
export function legacyTransport(json: boolean): WebStandardStreamableHTTPServerTransport {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options?: TransportSendOptions) =>
    send(
      isResourceNotFound(message)
        ? ({ ...message, error: { ...(message as { error: object }).error, code: RESOURCE_NOT_FOUND_2025 } } as JSONRPCMessage)
        : message,
      options,
    );
  return transport;
}
