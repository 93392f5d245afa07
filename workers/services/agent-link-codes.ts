import { z } from 'zod';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { notFound } from '../errors';
import { normalizeUserCode, userCodeHash } from '../lib/user-codes';
import { consentByLinkCode, type ConsentRecord } from './agent-consents';
import { requestByLinkCode, type PermissionRequestRecord } from './permission-requests';

export const LinkCodeBody = z.object({ link_code: z.string().min(1).max(32) });
export type LinkCodeBody = z.infer<typeof LinkCodeBody>;

/**
 * `POST /agents/connect/by-code`: what a link code stands for, a consent or a permission
 * request, in any state. Only the key's owner, acting in the key's workspace, finds it: any
 * other code is 404.
 */
export async function findByLinkCode(db: GlobalDb, principal: Principal, input: LinkCodeBody): Promise<ConsentRecord | PermissionRequestRecord> {
  const code = normalizeUserCode(input.link_code);
  if (code === null) throw notFound('Link code');
  const hash = await userCodeHash(code);
  const found = (await consentByLinkCode(db, principal, hash)) ?? (await requestByLinkCode(db, principal, hash));
  if (!found) throw notFound('Link code');
  return found;
}
