import type { Env } from '../env';

/** The binding that reaches a user's CredentialGate; mutations of credentials take only this. */
export type CredentialGates = Env['CREDENTIAL_GATE'];

/**
 * After a change in D1 to what any of these users' credentials resolve to (a key revoked,
 * rescoped, activated or moved; a session ended or moved; an OAuth token or grant revoked; a
 * membership added): their gates forget, so the very next request reads D1 again.
 */
export async function credentialsChanged(gates: CredentialGates, ...userIds: string[]): Promise<void> {
  await Promise.all([...new Set(userIds)].map((userId) => gates.getByName(userId).forget()));
}
