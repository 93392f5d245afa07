import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import { AREAS } from '../capabilities';
import { mountedPath, type CapabilityContext } from '../capabilities/capability';
import type { Env } from '../env';
import { publish, type ControlMessage } from '../services/control-plane';

type CacheInvalidate = Extract<ControlMessage, { type: 'cache-invalidate' }>;

/** Each tool's REST route: a call that changes something announces what that route's call would. */
const MIRRORED_ROUTES = new Map(
  AREAS.flatMap((area) => area.capabilities.flatMap((c) => (c.http ? [[c.name, { method: c.http.method, path: mountedPath(area.mount, c.http.path) }]] : []))),
);

/**
 * After a tool call that changed something, the workspace's control plane hears of it as of the
 * REST call the tool mirrors (`cache-invalidate`): consoles refresh, and MCP listen streams
 * learn which lists changed.
 */
export async function announceToolChange(ctx: CapabilityContext, toolName: string): Promise<void> {
  const route = MIRRORED_ROUTES.get(toolName);
  if (!route) return;
  await publish(ctx.env, ctx.actor.workspaceId, [{ type: 'cache-invalidate', resource: route.path.split('/')[3] ?? '', ...route }]);
}

/**
 * What a change to a resource group means for an MCP client: the prompts are the installed
 * skills; the resources are skills' files, workflow definitions, artifacts and working memory.
 * The tool list never changes while a deployment runs.
 */
function eventsOf(change: CacheInvalidate): ServerEvent[] {
  if (change.resource === 'skills' || change.resource === 'install') return [{ kind: 'prompts_list_changed' }, { kind: 'resources_list_changed' }];
  if (change.resource === 'workflows' || change.resource === 'artifacts') return [{ kind: 'resources_list_changed' }];
  if (change.resource === 'memory') return [{ kind: 'resource_updated', uri: 'memory://workspace' }];
  return [];
}

/**
 * Feeds a listen stream's bus from the workspace's channel: opens the channel's change stream
 * (registered there before this answers, so no change after it is missed) and publishes each
 * change on `bus` until the stream ends, which is when the answer resolves.
 */
export async function followWorkspaceChanges(env: Env, workspaceId: string, bus: ServerEventBus, signal: AbortSignal): Promise<{ ended: Promise<void> }> {
  const feed = await env.WORKSPACE_CHANNEL.getByName(workspaceId).fetch('https://channel/changes', { signal });
  const reader = feed.body!.pipeThrough(new TextDecoderStream()).getReader();
  const relay = async () => {
    let buffer = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffer += chunk.value;
      for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
        const data = /^data: (.*)$/m.exec(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        // Comment frames (keep-alive) carry no data.
        if (data) for (const event of eventsOf(JSON.parse(data[1]!) as CacheInvalidate)) bus.publish(event);
      }
    }
  };
  return { ended: relay().catch(() => undefined) };
}
