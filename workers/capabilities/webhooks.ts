import { z } from 'zod';
import { CursorQuery, cursorEnvelope } from '../lib/pagination';
import { idempotent } from '../middleware/idempotency';
import {
  createWebhook,
  CreateWebhookBody,
  deleteWebhook,
  DeliveryId,
  getWebhook,
  listDeliveries,
  listWebhooks,
  PatchWebhookBody,
  redeliver,
  rotateWebhookSecret,
  updateWebhook,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from '../services/webhooks';
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

const WebhookId = z.object({ webhookId: z.string().min(1).max(40).describe('The endpoint id, whk_<n>') });
const byId = { id: 'webhookId' };

/**
 * Webhook endpoints of the current workspace and their delivery log (docs/webhooks.md), for its
 * owners and admins. MCP tools too, asked for when called: profile:read and profile:write reach
 * far beyond webhooks, and an endpoint sends the workspace's events outside it.
 */
export const webhooksArea: Area = {
  mount: '/api/v1/webhooks',
  tag: 'Webhooks',
  capabilities: [
    defineCapability({
      name: 'list-webhooks',
      title: 'List webhook endpoints',
      description: 'Webhook endpoints of the workspace, newest first (owners and admins; never their secrets).',
      access: { auth: 'credential', scope: 'profile:read' },
      input: CursorQuery,
      output: cursorEnvelope(WebhookEndpoint),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: { stepUp: true },
      run: (ctx, query) => listWebhooks(ctx.db, ctx.actor, query),
    }),
    defineCapability({
      name: 'create-webhook',
      title: 'Add a webhook endpoint',
      description: 'Adds an endpoint for the event types named (owners and admins); its signing secret is shown once.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: CreateWebhookBody,
      output: WebhookEndpointWithSecret,
      annotations: WRITE,
      http: { method: 'POST', path: '/', status: 201, before: [idempotent], summary: 'Add a webhook endpoint; its signing secret is shown once' },
      mcp: { stepUp: true },
      run: (ctx, body) => createWebhook(ctx.db, ctx.env, ctx.actor, body),
    }),
    defineCapability({
      name: 'get-webhook',
      title: 'Get a webhook endpoint',
      description: 'One webhook endpoint of the workspace (owners and admins).',
      access: { auth: 'credential', scope: 'profile:read' },
      input: WebhookId,
      output: WebhookEndpoint,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id', params: byId },
      mcp: { stepUp: true },
      run: (ctx, { webhookId }) => getWebhook(ctx.db, ctx.actor, webhookId),
    }),
    defineCapability({
      name: 'update-webhook',
      title: 'Update a webhook endpoint',
      description: 'Changes the URL, event types or description, or disables or enables the endpoint (owners and admins).',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WebhookId.extend(PatchWebhookBody.shape),
      output: WebhookEndpoint,
      annotations: WRITE,
      http: { method: 'PATCH', path: '/:id', params: byId, body: PatchWebhookBody, summary: 'Change, disable or enable a webhook endpoint' },
      mcp: { stepUp: true },
      run: (ctx, { webhookId, ...patch }) => updateWebhook(ctx.db, ctx.env, ctx.actor, webhookId, patch),
    }),
    defineCapability({
      name: 'delete-webhook',
      title: 'Delete a webhook endpoint',
      description: 'Deletes the endpoint and its delivery log (owners and admins).',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WebhookId,
      output: z.object({ success: z.literal(true) }),
      annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
      http: { method: 'DELETE', path: '/:id', params: byId, summary: 'Delete the endpoint and its delivery log' },
      mcp: { stepUp: true },
      run: (ctx, { webhookId }) => deleteWebhook(ctx.db, ctx.actor, webhookId),
    }),
    defineCapability({
      name: 'rotate-webhook-secret',
      title: 'Rotate a webhook signing secret',
      description: 'A new signing secret, shown once; the old one keeps signing beside it for 24 hours (owners and admins).',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WebhookId,
      output: WebhookEndpointWithSecret,
      annotations: WRITE,
      http: { method: 'POST', path: '/:id/rotate-secret', params: byId, summary: 'A new signing secret, shown once; the old one signs beside it for 24 hours' },
      mcp: { stepUp: true },
      run: (ctx, { webhookId }) => rotateWebhookSecret(ctx.db, ctx.env, ctx.actor, webhookId),
    }),
    defineCapability({
      name: 'list-webhook-deliveries',
      title: 'List webhook deliveries',
      description: "The endpoint's deliveries, newest first, each with its attempts: status code, latency, error and time (owners and admins).",
      access: { auth: 'credential', scope: 'profile:read' },
      input: WebhookId.extend(CursorQuery.shape),
      output: cursorEnvelope(WebhookDelivery),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/deliveries', params: byId },
      mcp: { stepUp: true },
      run: (ctx, { webhookId, ...query }) => listDeliveries(ctx.db, ctx.actor, webhookId, query),
    }),
    defineCapability({
      name: 'redeliver-webhook',
      title: 'Redeliver a webhook',
      description: 'Sends a delivery again now, one attempt logged like the others (owners and admins; the endpoint must be enabled).',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WebhookId.extend({ deliveryId: DeliveryId }),
      output: WebhookDelivery,
      annotations: WRITE,
      http: {
        method: 'POST',
        path: '/:id/deliveries/:deliveryId/redeliver',
        params: byId,
        status: 202,
        summary: 'Send a delivery again now (one attempt)',
      },
      mcp: { stepUp: true },
      run: (ctx, { webhookId, deliveryId }) => redeliver(ctx.db, ctx.env, ctx.actor, webhookId, deliveryId),
    }),
  ],
};
