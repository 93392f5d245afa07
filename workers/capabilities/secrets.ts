import { z } from 'zod';
import { CursorQuery, cursorEnvelope } from '../lib/pagination';
import { idempotent } from '../middleware/idempotency';
import { createSecret, CreateSecretBody, deleteSecret, listSecrets, PatchSecretBody, SecretRecord, updateSecret } from '../services/secrets';
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

const SecretId = z.object({ secretId: z.string().min(1).max(40).describe('The secret id, sec_<n>') });
const byId = { id: 'secretId' };

/** Workspace secrets. Values are write-only: no answer ever carries one. */
export const secretsArea: Area = {
  mount: '/api/v1/secrets',
  tag: 'Secrets',
  capabilities: [
    defineCapability({
      name: 'list-secrets',
      title: 'List secrets',
      description: 'Secrets of the workspace, newest first (never their values).',
      access: { auth: 'credential', scope: 'library:read' },
      input: CursorQuery,
      output: cursorEnvelope(SecretRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listSecrets(ctx.db, ctx.actor, query),
    }),
    defineCapability({
      name: 'create-secret',
      title: 'Store a secret',
      description: 'Stores a secret, encrypted at rest.',
      access: { auth: 'credential', scope: 'library:write' },
      input: CreateSecretBody,
      output: SecretRecord,
      annotations: WRITE,
      http: { method: 'POST', path: '/', status: 201, before: [idempotent], summary: 'Store a secret, encrypted at rest' },
      mcp: false,
      run: (ctx, body) => createSecret(ctx.db, ctx.actor, ctx.env.ENCRYPTION_KEY, body),
    }),
    defineCapability({
      name: 'update-secret',
      title: 'Update a secret',
      description: 'Renames and/or rotates the value.',
      access: { auth: 'credential', scope: 'library:write' },
      input: SecretId.extend(PatchSecretBody.shape),
      output: SecretRecord,
      annotations: WRITE,
      http: { method: 'PATCH', path: '/:id', params: byId, body: PatchSecretBody, summary: 'Rename and/or rotate the value' },
      mcp: false,
      run: (ctx, { secretId, ...patch }) => updateSecret(ctx.db, ctx.actor, ctx.env.ENCRYPTION_KEY, secretId, patch),
    }),
    defineCapability({
      name: 'delete-secret',
      title: 'Delete a secret',
      description: 'Deletes the secret and its skill bindings.',
      access: { auth: 'credential', scope: 'library:write' },
      input: SecretId,
      output: z.object({ success: z.literal(true) }),
      annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
      http: { method: 'DELETE', path: '/:id', params: byId, summary: 'Delete the secret and its skill bindings' },
      mcp: false,
      run: (ctx, { secretId }) => deleteSecret(ctx.db, ctx.actor, secretId),
    }),
  ],
};
