import { z } from 'zod';
import { optionalJsonBody } from '../middleware/validate';
import { ApiKeyRecord } from '../services/api-keys';
import { approveConsent, ApproveConsentBody, connect, ConnectBody, ConsentRecord, denyConsent, listConsents, pollConsent } from '../services/agent-consents';
import { findByLinkCode, LinkCodeBody } from '../services/agent-link-codes';
import { DecisionsQuery } from '../services/agent-requests';
import {
  approvePermissionRequest,
  ApproveRequestBody,
  denyPermissionRequest,
  listPermissionRequests,
  PermissionRequestRecord,
  pollPermissionRequest,
  requestPermission,
  RequestPermissionBody,
  revokeScope,
  RevokeScopeParams,
} from '../services/permission-requests';
import { cursorEnvelope } from '../lib/pagination';
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

const ConsentId = z.object({ consentId: z.string().min(1).max(64).describe('The consent id') });
const RequestId = z.object({ requestId: z.string().min(1).max(64).describe('The permission request id') });
const DECIDE = { ...WRITE, idempotentHint: true };

const ConnectAnswer = z.union([
  z.object({ status: z.literal('active'), scopes: z.array(z.string()) }),
  z.object({
    status: z.literal('pending'),
    consent_id: z.string(),
    link_code: z.string(),
    poll_url: z.string(),
    poll_interval_seconds: z.number(),
    approval_url: z.string(),
    expires_at: z.string(),
  }),
]);
const ConnectPoll = z.object({
  status: z.enum(['pending', 'granted', 'denied', 'expired']),
  scopes: z.array(z.string()).optional(),
  grant_token: z.string().optional(),
  token_header: z.string().optional(),
});
const RequestAnswer = z.object({
  status: z.enum(['already_granted', 'pending']),
  grant_token: z.null().optional(),
  request_id: z.string().optional(),
  poll_url: z.string().optional(),
  poll_interval_seconds: z.number().optional(),
  link_code: z.string().optional(),
  approval_url: z.string().optional(),
  mode: z.string().optional(),
  expires_at: z.string().optional(),
});
const RequestPoll = z.object({
  status: z.enum(['pending', 'granted', 'denied', 'expired']),
  mode: z.string().optional(),
  expires_at: z.string().nullable().optional(),
  grant_token: z.string().optional(),
  token_header: z.string().optional(),
});

/**
 * How agents ask for scopes with their key (unactivated keys too) and how the key's owner
 * decides in the app: consents, one-scope permission requests, and revoking a scope.
 */
export const agentPermissionsArea: Area = {
  mount: '/api/v1/agents',
  tag: 'Agent permissions',
  capabilities: [
    defineCapability({
      name: 'connect-agent',
      title: 'Ask for scopes',
      description: 'Asks for scopes for the calling key: `active` when the key holds them, else a pending consent for its owner to decide.',
      access: { auth: 'agent' },
      input: ConnectBody,
      output: ConnectAnswer,
      annotations: WRITE,
      http: {
        method: 'POST',
        path: '/connect',
        before: [optionalJsonBody],
        summary: 'Ask for scopes: `active` (200) when the key holds them, else a pending consent (202)',
        respond: { schema: ConnectAnswer, send: (c, answer) => c.json(answer, answer.status === 'active' ? 200 : 202) },
      },
      mcp: false,
      run: (ctx, body) => connect(ctx.globalDb, ctx.actor, body, ctx.baseUrl),
    }),
    defineCapability({
      name: 'poll-consent',
      title: 'Poll a consent',
      description: 'Polls a consent of the calling key.',
      access: { auth: 'agent' },
      input: ConsentId,
      output: ConnectPoll,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/connect/poll/:consentId', summary: 'Poll a consent of the calling key' },
      mcp: false,
      run: (ctx, { consentId }) => pollConsent(ctx.globalDb, ctx.actor, consentId),
    }),
    defineCapability({
      name: 'find-by-link-code',
      title: 'Find by link code',
      description: 'The consent or permission request a link code stands for (the app).',
      access: { auth: 'session' },
      input: LinkCodeBody,
      output: z.union([ConsentRecord, PermissionRequestRecord]),
      annotations: READ_ONLY,
      http: { method: 'POST', path: '/connect/by-code' },
      mcp: false,
      run: (ctx, body) => findByLinkCode(ctx.globalDb, ctx.actor, body),
    }),
    defineCapability({
      name: 'list-consents',
      title: 'List agent consents',
      description: "The signed-in person's agent consents in this workspace (the app).",
      access: { auth: 'session' },
      input: DecisionsQuery,
      output: cursorEnvelope(ConsentRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/consents' },
      mcp: false,
      run: (ctx, query) => listConsents(ctx.globalDb, ctx.actor, query),
    }),
    defineCapability({
      name: 'approve-consent',
      title: 'Approve a consent',
      description: 'Approves a consent, optionally narrowing its scopes (the app).',
      access: { auth: 'session' },
      input: ConsentId.extend(ApproveConsentBody.shape),
      output: ConsentRecord.extend({ scopes: z.array(z.string()) }),
      annotations: DECIDE,
      http: {
        method: 'POST',
        path: '/consents/:consentId/approve',
        before: [optionalJsonBody],
        summary: 'Approve a consent, optionally narrowing its scopes (the app)',
      },
      mcp: false,
      run: (ctx, { consentId, ...body }) => approveConsent(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, consentId, body),
    }),
    defineCapability({
      name: 'deny-consent',
      title: 'Deny a consent',
      description: 'Denies a consent (the app).',
      access: { auth: 'session' },
      input: ConsentId,
      output: ConsentRecord,
      annotations: DECIDE,
      http: { method: 'POST', path: '/consents/:consentId/deny', summary: 'Deny a consent (the app)' },
      mcp: false,
      run: (ctx, { consentId }) => denyConsent(ctx.globalDb, ctx.actor, consentId),
    }),
    defineCapability({
      name: 'request-permission',
      title: 'Ask for one more scope',
      description: 'Asks for one more scope for the calling key: `already_granted`, or a pending request for its owner to decide.',
      access: { auth: 'agent' },
      input: RequestPermissionBody,
      output: RequestAnswer,
      annotations: WRITE,
      http: {
        method: 'POST',
        path: '/request-permission',
        summary: 'Ask for one more scope: `already_granted` (200) or a pending request (202)',
        respond: { schema: RequestAnswer, send: (c, answer) => c.json(answer, answer.status === 'pending' ? 202 : 200) },
      },
      mcp: false,
      run: (ctx, body) => requestPermission(ctx.globalDb, ctx.actor, body, ctx.baseUrl),
    }),
    defineCapability({
      name: 'poll-permission-request',
      title: 'Poll a permission request',
      description: 'Polls a permission request of the calling key.',
      access: { auth: 'agent' },
      input: RequestId,
      output: RequestPoll,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/request-permission/poll/:requestId', summary: 'Poll a permission request of the calling key' },
      mcp: false,
      run: (ctx, { requestId }) => pollPermissionRequest(ctx.globalDb, ctx.actor, requestId),
    }),
    defineCapability({
      name: 'list-permission-requests',
      title: 'List permission requests',
      description: "The signed-in person's permission requests in this workspace (the app).",
      access: { auth: 'session' },
      input: DecisionsQuery,
      output: cursorEnvelope(PermissionRequestRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/permission-requests' },
      mcp: false,
      run: (ctx, query) => listPermissionRequests(ctx.globalDb, ctx.actor, query),
    }),
    defineCapability({
      name: 'approve-permission-request',
      title: 'Grant a permission request',
      description: 'Grants a permission request, optionally in another mode (the app).',
      access: { auth: 'session' },
      input: RequestId.extend(ApproveRequestBody.shape),
      output: PermissionRequestRecord,
      annotations: DECIDE,
      http: {
        method: 'POST',
        path: '/permission-requests/:requestId/approve',
        before: [optionalJsonBody],
        summary: 'Grant a permission request, optionally in another mode (the app)',
      },
      mcp: false,
      run: (ctx, { requestId, ...body }) => approvePermissionRequest(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, requestId, body),
    }),
    defineCapability({
      name: 'deny-permission-request',
      title: 'Deny a permission request',
      description: 'Denies a permission request (the app).',
      access: { auth: 'session' },
      input: RequestId,
      output: PermissionRequestRecord,
      annotations: DECIDE,
      http: { method: 'POST', path: '/permission-requests/:requestId/deny', summary: 'Deny a permission request (the app)' },
      mcp: false,
      run: (ctx, { requestId }) => denyPermissionRequest(ctx.globalDb, ctx.actor, requestId),
    }),
    defineCapability({
      name: 'revoke-key-scope',
      title: 'Revoke a scope from a key',
      description: 'Revokes one scope from one of your keys.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: RevokeScopeParams,
      output: ApiKeyRecord,
      annotations: { ...DECIDE, destructiveHint: true },
      http: { method: 'DELETE', path: '/:keyId/scopes/:scope', summary: 'Revoke one scope from one of your keys' },
      mcp: false,
      run: (ctx, params) => revokeScope(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, params),
    }),
  ],
};
