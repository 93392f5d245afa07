import type { GateAnswer, GateRequest, Refusal } from '../../durable-objects/CredentialGate';
import type { GlobalDb, Env } from '../env';
import { AppError } from '../errors';
import { resolveCredential } from './credentials';

/**
 * Which user each credential hash belongs to, learnt from D1 once per isolate. That never changes
 * (a key, session or token never changes hands), so remembering it cannot keep a revoked
 * credential working: the user's gate decides that. Hashes and ids only.
 */
const owners = new Map<string, string>();
const MAX_OWNERS = 10_000;

/**
 * Asks the credential owner's gate who is calling, whether the credential admits them and how
 * many requests are left, in one call. An isolate that has not seen the credential first
 * resolves it from D1 to learn its owner; a refusal there throws as `resolveCredential` does.
 */
export async function admit(env: Env, db: GlobalDb, request: GateRequest): Promise<GateAnswer> {
  const { kind, hash } = request.credential;
  const ownerKey = `${kind}:${hash}`;
  let userId = owners.get(ownerKey);
  if (userId === undefined) {
    ({
      principal: { userId },
    } = await resolveCredential(db, request.credential, { allowUnactivated: request.allowUnactivated }));
    if (owners.size >= MAX_OWNERS) owners.clear();
    owners.set(ownerKey, userId);
  }
  return env.CREDENTIAL_GATE.getByName(userId).admit(request);
}

/** A valid token presented where it was not issued for: its challenge says so (RFC 6750 3.1 `error_description`). */
export class WrongAudience extends AppError {
  constructor(audience: string) {
    super('UNAUTHORIZED', 401, `This access token was issued for ${audience}, not for this endpoint`);
  }
}

/** The error a gate's refusal stands for. */
export const refusalError = (refusal: Refusal): AppError =>
  'wrongAudience' in refusal ? new WrongAudience(refusal.wrongAudience) : new AppError(refusal.code, refusal.status, refusal.message, refusal.details);

/** Test hook: this isolate forgets the owners it learnt, as a fresh isolate would start. */
export const forgetCredentialOwners = (): void => owners.clear();
