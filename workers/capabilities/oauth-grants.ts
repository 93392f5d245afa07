import { z } from 'zod';
import { CursorQuery, cursorEnvelope } from '../lib/pagination';
import { listOAuthGrants, OAuthGrantRecord, revokeOAuthGrant } from '../services/oauth-grants';
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

/**
 * The apps the signed-in person let in through the OAuth consent page, across their workspaces:
 * a session's only, so that no app (nor a key bound to one workspace) reads or ends another's.
 */
export const oauthGrantsArea: Area = {
  mount: '/api/v1/oauth-grants',
  tag: 'Profile',
  capabilities: [
    defineCapability({
      name: 'list-oauth-grants',
      title: 'List connected apps',
      description: 'The apps the signed-in person let in through the OAuth consent page that can still act, in any of their workspaces, newest first.',
      access: { auth: 'session' },
      input: CursorQuery,
      output: cursorEnvelope(OAuthGrantRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listOAuthGrants(ctx.globalDb, ctx.actor, query),
    }),
    defineCapability({
      name: 'revoke-oauth-grant',
      title: 'Revoke a connected app',
      description: "Revokes one of the signed-in person's OAuth grants: the app's refresh and access tokens stop working at once.",
      access: { auth: 'session' },
      input: z.object({ grantId: z.string().min(1).max(64).describe('The grant id') }),
      output: OAuthGrantRecord,
      annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
      http: { method: 'POST', path: '/:id/revoke', params: { id: 'grantId' }, summary: 'Revoke a connected app: its tokens stop working at once' },
      mcp: false,
      run: (ctx, { grantId }) => revokeOAuthGrant(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, grantId),
    }),
  ],
};
