import { it } from 'vitest';
import { call, createKey, signUp } from '../helpers/api';

it('probe', async () => {
  const owner = await signUp();
  const joiner = await signUp();
  const inv = await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, { token: owner.token, body: { email: joiner.email, role: 'member' } });
  console.log('INV', inv.status, JSON.stringify(inv.body));
  const acc = await call('/api/v1/invitations/accept', { token: joiner.token, body: { token: inv.body.token } });
  console.log('ACC', acc.status, JSON.stringify(acc.body));
  const hdr = { 'x-workspace-id': owner.workspaceId };
  const ownerKey = await createKey(owner, ['*']);
  const rev = await call(`/api/v1/api-keys/${ownerKey.id}/revoke`, { method: 'POST', token: joiner.token, headers: hdr });
  console.log('REV', rev.status, JSON.stringify(rev.body));
  const list = await call(`/api/v1/api-keys`, { token: joiner.token, headers: hdr });
  console.log('LIST', list.status, JSON.stringify(list.body));
  const a = await call('/api/v1/api-keys', { token: owner.token, headers: { 'idempotency-key': 'same' }, body: { name: 'x' } });
  const b = await call('/api/v1/api-keys', { token: joiner.token, headers: { ...hdr, 'idempotency-key': 'same' }, body: { name: 'x' } });
  console.log('IDEM', a.status, b.status, b.headers.get('idempotency-replayed'), a.body.key === b.body.key);
  const mem = await call('/api/v1/memory', { token: joiner.token, headers: hdr });
  console.log('MEM', mem.status, JSON.stringify(mem.body));
});
