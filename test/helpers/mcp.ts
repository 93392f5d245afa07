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
