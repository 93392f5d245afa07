import { AppBridge, getToolUiResourceUri, PostMessageTransport, RESOURCE_MIME_TYPE, type McpUiResourceCsp } from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

/**
 * A minimal MCP Apps host, bundled by mcp-app.test.ts into a page of its own origin: an MCP client
 * of the service's /mcp (2026-07-28, with an API key) declaring the ui extension, and for each tool it is
 * asked to call, the tool's ui:// view in a sandboxed frame under the CSP the view declares,
 * bridged with the ext-apps SDK's AppBridge. The view's own tool calls and resource reads go
 * through this client; each is recorded in `host.calls`.
 */

/** The extension's default CSP (the view declares no domains), built as its specification says hosts do. */
const cspOf = (csp: McpUiResourceCsp = {}) =>
  [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${(csp.resourceDomains ?? []).join(' ')}`,
    `style-src 'self' 'unsafe-inline' ${(csp.resourceDomains ?? []).join(' ')}`,
    `connect-src ${(csp.connectDomains ?? []).join(' ') || "'none'"}`,
    "img-src 'self' data:",
    "media-src 'self' data:",
    `frame-src ${(csp.frameDomains ?? []).join(' ') || "'none'"}`,
    "object-src 'none'",
  ].join('; ');

let client: Client;
let bridge: AppBridge | undefined;
const calls: string[] = [];

async function connect(base: string, apiKey: string) {
  // The current revision: each request declares the ui extension in its `_meta`.
  client = new Client(
    { name: 'e2e-app-host', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [RESOURCE_MIME_TYPE] } } },
    },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { 'x-api-key': apiKey } } }));
}

/** Calls `name` as a chat host would, showing its result in the view its definition points to; answers the result's structured content. */
async function show(name: string, args: Record<string, unknown>) {
  const tool = (await client.listTools()).tools.find((t) => t.name === name);
  const uri = tool && getToolUiResourceUri(tool);
  if (!uri) throw new Error(`${name} points to no view`);
  const [content] = (await client.readResource({ uri })).contents as { mimeType: string; text: string; _meta?: { ui?: { csp?: McpUiResourceCsp } } }[];
  if (content?.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} is ${content?.mimeType}`);

  await bridge?.close();
  const frame = document.createElement('iframe');
  frame.title = 'Run view';
  // The strictest sandbox a view can work in: scripts, and nothing else (no forms, no same origin).
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.srcdoc = content.text.replace('<head>', `<head><meta http-equiv="Content-Security-Policy" content="${cspOf(content._meta?.ui?.csp)}">`);
  document.getElementById('view')!.replaceChildren(frame);

  bridge = new AppBridge(
    null,
    { name: 'e2e-app-host', version: '1.0.0' },
    { serverTools: {}, serverResources: {}, downloadFile: {} },
    { hostContext: { theme: 'light', displayMode: 'inline' } },
  );
  bridge.oncalltool = async (params) => {
    calls.push(params.name);
    return client.callTool(params);
  };
  bridge.onreadresource = async (params) => client.readResource(params);
  bridge.onsizechange = ({ height }) => void (height && (frame.style.height = `${height}px`));
  bridge.ondownloadfile = async ({ contents }) => {
    for (const item of contents) {
      if (item.type !== 'resource') continue;
      const { resource } = item;
      const bytes = 'blob' in resource ? Uint8Array.from(atob(resource.blob), (c) => c.charCodeAt(0)) : resource.text;
      const link = document.createElement('a');
      link.href = URL.createObjectURL(new Blob([bytes], { type: resource.mimeType }));
      link.download = decodeURIComponent(new URL(resource.uri).pathname.split('/').pop() ?? 'download');
      link.click();
    }
    return {};
  };
  const initialized = new Promise<void>((resolve) => (bridge!.oninitialized = () => resolve()));
  await bridge.connect(new PostMessageTransport(frame.contentWindow!, frame.contentWindow!));
  await initialized;

  await bridge.sendToolInput({ arguments: args });
  const result = await client.callTool({ name, arguments: args });
  await bridge.sendToolResult(result);
  return result.structuredContent;
}

Object.assign(window, { host: { connect, show, calls } });
