/**
 * A JSON-RPC error a request handler throws: the SDK sends its `code`, `message` and `data` as
 * they are. The SDK's own McpError is not used: its message already starts with
 * "MCP error <code>:", and the client's McpError adds that prefix again.
 */
export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}
