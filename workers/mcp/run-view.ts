import { EXTENSION_ID, RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from '@modelcontextprotocol/ext-apps/server';
import type { Resource } from '@modelcontextprotocol/server';
import { RUN_VIEW_HTML } from './run-view.generated';

/**
 * The run view as an MCP App (extension `io.modelcontextprotocol/ui`): one HTML document,
 * console/src/run-view.ts and the console modules it shares, bundled by scripts/console-build.mjs.
 */
export const RUN_VIEW_URI = 'ui://workspace-skills/run-view';

/** The tools whose results the view draws: a skill run and a workflow run, as they start and as they are read. */
export const RUN_VIEW_TOOLS: readonly string[] = ['execute-skill', 'get-execution-status', 'start-workflow', 'get-workflow-run'];

/** What the server declares of the extension: the one kind of view it serves. */
export const UI_EXTENSION = { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } };

/**
 * The view's sandbox: it reaches the service only through the host's tool calls and resource
 * reads, so it asks for no network (an empty `csp` is the extension's strictest default), and a
 * border from the host, which draws its frame like any other tool result.
 */
const UI_META = { ui: { csp: {}, prefersBorder: true } };

/**
 * A tool's `_meta` pointing to the view: `ui.resourceUri`, and the flat `ui/resourceUri` older
 * hosts read (as the ext-apps server helpers' registerAppTool writes both).
 */
export const runViewToolMeta = (toolName: string) =>
  RUN_VIEW_TOOLS.includes(toolName) ? { ui: { resourceUri: RUN_VIEW_URI }, [RESOURCE_URI_META_KEY]: RUN_VIEW_URI } : undefined;

export const RUN_VIEW_RESOURCE: Resource = {
  uri: RUN_VIEW_URI,
  name: 'run-view',
  title: 'Run view',
  description: 'A skill run as it streams (text, tool calls, artifacts), or a workflow run’s steps with the form of a step waiting for input',
  mimeType: RESOURCE_MIME_TYPE,
  _meta: UI_META,
};

export const runViewContents = () => [{ uri: RUN_VIEW_URI, mimeType: RESOURCE_MIME_TYPE, text: RUN_VIEW_HTML, _meta: UI_META }];
