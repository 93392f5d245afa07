import { z } from 'zod';
import { createSubscribeUrl } from '../services/control-plane';
import { defineCapability, READ_ONLY, type Area } from './capability';

const SubscribeUrl = z.object({ url: z.string(), expiresInMs: z.number() });

/** The workspace's real-time control plane. */
export const eventsArea: Area = {
  mount: '/api/v1/events',
  tag: 'Events',
  capabilities: [
    defineCapability({
      name: 'get-subscribe-url',
      title: 'Get the control-plane URL',
      description: "A signed WebSocket URL for the workspace's control plane, valid 5 minutes.",
      access: { auth: 'credential', scope: 'channel:read' },
      input: z.object({}),
      output: SubscribeUrl,
      annotations: READ_ONLY,
      http: {
        method: 'GET',
        path: '/subscribe-url',
        // The socket is the service's own: on the origin the request reached, ws: or wss:.
        respond: { schema: SubscribeUrl, send: (c, { url, expiresInMs }) => c.json({ url: new URL(url, c.req.url).href.replace(/^http/, 'ws'), expiresInMs }) },
      },
      mcp: false,
      run: (ctx) => createSubscribeUrl(ctx.actor, ctx.env.SIGNING_SECRET),
    }),
  ],
};
