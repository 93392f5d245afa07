import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { optionalJsonBody, validate } from '../middleware/validate';
import { ApiKeyRecord } from '../services/api-keys';
import {
  approveConsent,
  ApproveConsentBody,
  approvePermissionRequest,
  ApproveRequestBody,
  connect,
  ConnectBody,
  ConsentRecord,
  denyConsent,
  denyPermissionRequest,
  findByLinkCode,
  LinkCodeBody,
  listPermissionRequests,
  PermissionRequestRecord,
  PermissionRequestsQuery,
  pollConsent,
  pollPermissionRequest,
  requestPermission,
  RequestPermissionBody,
  revokeScope,
  RevokeScopeParams,
} from '../services/agent-permissions';
import { cursorEnvelope, documented } from './openapi';

const ConsentParam = z.object({ consentId: z.string().min(1).max(64) });
const RequestParam = z.object({ requestId: z.string().min(1).max(64) });

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
const baseUrl = (url: string) => new URL(url).origin;

/** Spec 3.3, 3.4 and 5.5: agents ask for scopes; the person decides in the app. */
export const agentPermissionsRoutes = new Hono<AppEnv>()
  .post(
    '/connect',
    documented('Agent permissions', 'Ask for scopes: `active` (200) when the key holds them, else a pending consent (202)', 200, ConnectAnswer),
    optionalJsonBody,
    validate('json', ConnectBody),
    async (c) => {
      const answer = await connect(c.var.db, principalOf(c), c.req.valid('json'), baseUrl(c.req.url));
      return c.json(answer, answer.status === 'active' ? 200 : 202);
    },
  )
  .get(
    '/connect/poll/:consentId',
    documented('Agent permissions', 'Poll a consent of the calling key', 200, ConnectPoll),
    validate('param', ConsentParam),
    async (c) => c.json(await pollConsent(c.var.db, principalOf(c), c.req.valid('param').consentId)),
  )
  .post(
    '/connect/by-code',
    documented(
      'Agent permissions',
      'The consent or permission request a link code stands for (the app)',
      200,
      z.union([ConsentRecord, PermissionRequestRecord]),
    ),
    validate('json', LinkCodeBody),
    async (c) => c.json(await findByLinkCode(c.var.db, principalOf(c), c.req.valid('json'))),
  )
  .post(
    '/consents/:consentId/approve',
    documented('Agent permissions', 'Approve a consent, optionally narrowing its scopes (the app)', 200, ConsentRecord.extend({ scopes: z.array(z.string()) })),
    validate('param', ConsentParam),
    optionalJsonBody,
    validate('json', ApproveConsentBody),
    async (c) => c.json(await approveConsent(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('param').consentId, c.req.valid('json'))),
  )
  .post(
    '/consents/:consentId/deny',
    documented('Agent permissions', 'Deny a consent (the app)', 200, ConsentRecord),
    validate('param', ConsentParam),
    async (c) => c.json(await denyConsent(c.var.db, principalOf(c), c.req.valid('param').consentId)),
  )
  .post(
    '/request-permission',
    documented('Agent permissions', 'Ask for one more scope: `already_granted` (200) or a pending request (202)', 200, RequestAnswer),
    validate('json', RequestPermissionBody),
    async (c) => {
      const answer = await requestPermission(c.var.db, principalOf(c), c.req.valid('json'), baseUrl(c.req.url));
      return c.json(answer, answer.status === 'pending' ? 202 : 200);
    },
  )
  .get(
    '/request-permission/poll/:requestId',
    documented('Agent permissions', 'Poll a permission request of the calling key', 200, RequestPoll),
    validate('param', RequestParam),
    async (c) => c.json(await pollPermissionRequest(c.var.db, principalOf(c), c.req.valid('param').requestId)),
  )
  .get(
    '/permission-requests',
    documented('Agent permissions', "The signed-in person's permission requests in this workspace (the app)", 200, cursorEnvelope(PermissionRequestRecord)),
    validate('query', PermissionRequestsQuery),
    async (c) => c.json(await listPermissionRequests(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .post(
    '/permission-requests/:requestId/approve',
    documented('Agent permissions', 'Grant a permission request, optionally in another mode (the app)', 200, PermissionRequestRecord),
    validate('param', RequestParam),
    optionalJsonBody,
    validate('json', ApproveRequestBody),
    async (c) => c.json(await approvePermissionRequest(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('param').requestId, c.req.valid('json'))),
  )
  .post(
    '/permission-requests/:requestId/deny',
    documented('Agent permissions', 'Deny a permission request (the app)', 200, PermissionRequestRecord),
    validate('param', RequestParam),
    async (c) => c.json(await denyPermissionRequest(c.var.db, principalOf(c), c.req.valid('param').requestId)),
  )
  .delete(
    '/:keyId/scopes/:scope',
    documented('Agent permissions', 'Revoke one scope from one of your keys', 200, ApiKeyRecord),
    validate('param', RevokeScopeParams),
    async (c) => c.json(await revokeScope(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('param'))),
  );
