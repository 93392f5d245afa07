import { errors, jwtVerify, SignJWT } from 'jose';
import { now } from './clock';

/**
 * Short-lived signed URLs: an HS256 JWT under
 * SIGNING_SECRET, in the query string, naming what it opens (`aud`) and for whom: an event
 * stream, the control channel, or a workspace export's archive.
 */
export type StreamAudience = 'execution-stream' | 'control-channel' | 'workspace-export';

export interface StreamClaims {
  /** What the token opens, e.g. an execution id. */
  subject: string;
  workspaceId: string;
  /** Whose open streams this URL's count toward: the credential that asked for it (`key:12`, `user:<id>`). */
  holder: string;
}

const key = (secret: string) => new TextEncoder().encode(secret);

export async function signStreamToken(secret: string, audience: StreamAudience, claims: StreamClaims, ttlMs: number): Promise<string> {
  const issuedAt = Math.floor(now() / 1000);
  return new SignJWT({ wid: claims.workspaceId, hld: claims.holder })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.subject)
    .setAudience(audience)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + Math.ceil(ttlMs / 1000))
    .sign(key(secret));
}

/** The claims of a valid token for `audience`, or null (tampered, expired, or for something else). */
export async function verifyStreamToken(secret: string, audience: StreamAudience, token: string): Promise<StreamClaims | null> {
  try {
    const { payload } = await jwtVerify(token, key(secret), {
      audience,
      algorithms: ['HS256'],
      // Every URL this service signs expires; a token without exp would open its stream forever.
      requiredClaims: ['exp', 'sub'],
      currentDate: new Date(now()),
    });
    if (typeof payload.sub !== 'string' || typeof payload.wid !== 'string' || typeof payload.hld !== 'string') return null;
    return { subject: payload.sub, workspaceId: payload.wid, holder: payload.hld };
  } catch (error) {
    if (error instanceof errors.JOSEError) return null;
    throw error;
  }
}
