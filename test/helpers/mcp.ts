import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exports } from 'cloudflare:workers';
import { expect } from 'vitest';
import { BASE } from './api';

/** The SDK's own client over its Streamable HTTP transport, its requests answered by the Worker in-process. */
export async function connectMcp(headers: Record<string, string>) {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
      requestInit: { headers },
      fetch: (url, init) => exports.default.fetch(new Request(url, init)),
    }),
  );
  return client;
}

export type ToolResult = Awaited<ReturnType<Client['callTool']>>;

/** A tool result's JSON text, parsed. */
export const toolJson = (result: ToolResult) => JSON.parse((result.content as { type: string; text: string }[])[0]!.text);

/** A successful result's answer; its structuredContent must say the same as its text. */
export const ok = (result: ToolResult) => {
  if (result.isError) throw new Error(`tool failed: ${JSON.stringify(result.content)}`);
  expect(result.structuredContent).toEqual(toolJson(result));
  return toolJson(result);
};

/** A tool error carrying the envelope with `code`; answers the envelope's error. */
export const failure = (result: ToolResult, code: string) => {
  expect(result.isError, JSON.stringify(result.content)).toBe(true);
  expect(toolJson(result).error.code).toBe(code);
  return toolJson(result).error;
};

/** The 2026-07-28 revision, which the raw JSON-RPC tests speak: no handshake, an envelope on every request. */
export const MCP_2026 = '2026-07-28';

/** The `_meta` envelope a 2026-07-28 request carries, declaring `capabilities`. */
export const envelope2026 = (capabilities: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': MCP_2026,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-client', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': capabilities,
});

/**
 * One request as a 2026-07-28 client sends it, with `key`: `Mcp-Method`, and `Mcp-Name` for a
 * request naming a tool, a resource or a task; `headers` add to those or override them.
 */
export function post2026(
  key: string,
  method: string,
  params: Record<string, unknown>,
  meta: Record<string, unknown>,
  { id = 1, headers = {} }: { id?: number | string; headers?: Record<string, string> } = {},
) {
  const name = params.name ?? params.uri ?? params.taskId;
  return exports.default.fetch(`${BASE}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'x-api-key': key,
      'mcp-protocol-version': MCP_2026,
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
  });
}

/** A `tools/call` with a progress token, as a 2025 client sends it raw: the answer streams the call's progress. */
export const callFollowed = (key: string, name: string, args: Record<string, unknown>) =>
  exports.default.fetch(`${BASE}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': key },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: { progressToken: 'p1' } } }),
  });
