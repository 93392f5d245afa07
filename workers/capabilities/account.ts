import { z } from 'zod';
import { CursorQuery, cursorEnvelope } from '../lib/pagination';
import { idempotent } from '../middleware/idempotency';
import { AccountDeletion, DeleteAccountBody, getAccountDeletion, requestAccountDeletion } from '../services/account-deletion';
import { getProfile, Profile, ProfilePatch, updateProfile } from '../services/accounts';
import { ApiKeyRecord, createApiKey, CreateApiKeyBody, CreatedApiKey, listApiKeys, revokeApiKey } from '../services/api-keys';
import {
  acceptInvitation,
  AcceptInvitationBody,
  createInvitation,
  CreateInvitationBody,
  CreatedInvitation,
  InvitationRecord,
  listInvitations,
} from '../services/invitations';
import { getRetention, RetentionPatch, RetentionWindows, setRetention } from '../services/retention';
import { getSkillGuard, setSkillGuard, SkillGuardBody, SkillGuardSetting } from '../services/skill-guard';
import { getSpendLimits, setSpendLimits, SpendLimits, SpendLimitsBody } from '../services/spend-limits';
import { getTelemetry, setTelemetry, TelemetryBody, TelemetryDestination } from '../services/telemetry';
import { DeleteWorkspaceBody, getDeletion, requestDeletion, WorkspaceDeletion } from '../services/workspace-deletion';
import { driveExport, ExportJob, getExport, logFailure, startExport } from '../services/workspace-exports';
import {
  createWorkspace,
  CreateWorkspaceBody,
  getCurrentWorkspace,
  listMembers,
  listWorkspaces,
  MemberRecord,
  setCurrentWorkspace,
  SetCurrentWorkspaceBody,
  WorkspaceRecord,
} from '../services/workspaces';
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

/** The caller: who they are, their workspace and scopes. */
export const profileArea: Area = {
  mount: '/api/v1/profile',
  tag: 'Profile',
  capabilities: [
    defineCapability({
      name: 'get-profile',
      title: 'Get the profile',
      description: 'The caller, their workspace and scopes.',
      access: { auth: 'credential', scope: 'profile:read' },
      input: z.object({}),
      output: Profile,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx) => getProfile(ctx.globalDb, ctx.actor),
    }),
    defineCapability({
      name: 'update-profile',
      title: 'Rename the caller',
      description: 'Renames the caller.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: ProfilePatch,
      output: Profile,
      annotations: WRITE,
      http: { method: 'PATCH', path: '/', summary: 'Rename the caller' },
      mcp: false,
      run: (ctx, patch) => updateProfile(ctx.globalDb, ctx.actor, patch),
    }),
    defineCapability({
      name: 'delete-account',
      title: 'Delete the account',
      description:
        "Deletes the caller's account (a session only, with its password unless signed in within 10 minutes): its workspaces no one else owns and everything in them, its memberships, every session, key and OAuth grant; the ledger keeps its entries under an anonymous id. Answers the deletion's job with a status URL that needs no credential.",
      access: { auth: 'session' },
      input: DeleteAccountBody,
      output: AccountDeletion,
      annotations: { ...WRITE, destructiveHint: true },
      http: {
        method: 'DELETE',
        path: '/',
        body: DeleteAccountBody,
        status: 202,
        summary: "Delete the caller's account (a session, with its password); answers the deletion's job and its status URL",
      },
      mcp: false,
      run: (ctx, body) => requestAccountDeletion(ctx.globalDb, ctx.env, ctx.actor, body, ctx.baseUrl),
    }),
  ],
};

/** An account deletion's progress, read with the status token its answer carried (the account has no credential left). */
export const accountDeletionsArea: Area = {
  mount: '/api/v1/account-deletions',
  tag: 'Profile',
  capabilities: [
    defineCapability({
      name: 'get-account-deletion',
      title: "Get an account's deletion",
      description: "An account deletion's job and its workspaces' jobs, to whoever holds the status token from the deletion's answer.",
      access: { auth: 'public' },
      input: z.object({ token: z.string().min(1).max(100).describe('The status token (`adel_…`), from the status URL') }),
      output: AccountDeletion,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:token' },
      mcp: false,
      run: (ctx, { token }) => getAccountDeletion(ctx.globalDb, token),
    }),
  ],
};

const WorkspaceId = z.object({ workspaceId: z.string().min(1).max(100).describe('The workspace id') });
const byId = { id: 'workspaceId' };

/** Workspaces, their members and invitations. */
export const workspacesArea: Area = {
  mount: '/api/v1/workspaces',
  tag: 'Workspaces',
  capabilities: [
    defineCapability({
      name: 'list-workspaces',
      title: 'List workspaces',
      description: "The caller's workspaces.",
      access: { auth: 'credential', scope: 'profile:read' },
      input: CursorQuery,
      output: cursorEnvelope(WorkspaceRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listWorkspaces(ctx.globalDb, ctx.actor, query),
    }),
    defineCapability({
      name: 'create-workspace',
      title: 'Create a workspace',
      description: 'Creates a workspace; the caller becomes its owner.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: CreateWorkspaceBody,
      output: WorkspaceRecord,
      annotations: WRITE,
      http: { method: 'POST', path: '/', status: 201, before: [idempotent], summary: 'Create a workspace; the caller becomes its owner' },
      mcp: false,
      run: (ctx, body) => createWorkspace(ctx.globalDb, ctx.env, ctx.actor, body),
    }),
    defineCapability({
      name: 'get-current-workspace',
      title: 'Get the current workspace',
      description: 'The workspace this credential acts in.',
      access: { auth: 'credential', scope: 'profile:read' },
      input: z.object({}),
      output: WorkspaceRecord,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/current' },
      mcp: false,
      run: (ctx) => getCurrentWorkspace(ctx.globalDb, ctx.actor),
    }),
    defineCapability({
      name: 'set-current-workspace',
      title: 'Set the current workspace',
      description: 'Rebinds the API key (or sets the session default) to another workspace.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: SetCurrentWorkspaceBody,
      output: WorkspaceRecord,
      annotations: WRITE,
      http: { method: 'PUT', path: '/current', summary: 'Rebind the API key (or set the session default) to another workspace' },
      mcp: false,
      run: (ctx, body) => setCurrentWorkspace(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, body),
    }),
    defineCapability({
      name: 'list-members',
      title: 'List members',
      description: 'Members of the current workspace.',
      access: { auth: 'credential', scope: 'profile:search' },
      input: WorkspaceId.extend(CursorQuery.shape),
      output: cursorEnvelope(MemberRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/members', params: byId },
      mcp: false,
      run: (ctx, { workspaceId, ...query }) => listMembers(ctx.globalDb, ctx.actor, workspaceId, query),
    }),
    defineCapability({
      name: 'list-invitations',
      title: 'List invitations',
      description: 'Invitations of the current workspace.',
      access: { auth: 'credential', scope: 'profile:search' },
      input: WorkspaceId.extend(CursorQuery.shape),
      output: cursorEnvelope(InvitationRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/invitations', params: byId },
      mcp: false,
      run: (ctx, { workspaceId, ...query }) => listInvitations(ctx.globalDb, ctx.actor, workspaceId, query),
    }),
    defineCapability({
      name: 'create-invitation',
      title: 'Invite someone',
      description: 'Invites someone by email (owners and admins); the token is shown once.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId.extend(CreateInvitationBody.shape),
      output: CreatedInvitation,
      annotations: WRITE,
      http: {
        method: 'POST',
        path: '/:id/invitations',
        params: byId,
        status: 201,
        summary: 'Invite someone by email (owners and admins); the token is shown once',
      },
      mcp: false,
      run: (ctx, { workspaceId, ...body }) => createInvitation(ctx.globalDb, ctx.actor, workspaceId, body),
    }),
    defineCapability({
      name: 'get-limits',
      title: 'Get spend limits',
      description:
        'The workspace’s monthly and daily spend limits in Ds (null: none), with what it was charged this month and today and when each count starts again.',
      access: { auth: 'credential', scope: 'billing:read' },
      input: WorkspaceId,
      output: SpendLimits,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/limits', params: byId },
      run: (ctx, { workspaceId }) => getSpendLimits(ctx.db, ctx.globalDb, ctx.actor, workspaceId),
    }),
    defineCapability({
      name: 'set-limits',
      title: 'Set spend limits',
      description:
        'Sets or clears (null) the workspace’s monthly and daily spend limits in Ds (owners only). Runs that would start past a limit are refused with 402 INSUFFICIENT_CREDITS until it resets.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId.extend(SpendLimitsBody.shape),
      output: SpendLimits,
      annotations: { ...WRITE, idempotentHint: true },
      http: { method: 'PUT', path: '/:id/limits', params: byId, summary: 'Set spend limits in Ds (owners only)' },
      mcp: { stepUp: true },
      run: (ctx, { workspaceId, ...patch }) => setSpendLimits(ctx.db, ctx.globalDb, ctx.actor, workspaceId, patch),
    }),
    defineCapability({
      name: 'get-telemetry',
      title: 'Get the OpenTelemetry destination',
      description:
        'Where the workspace’s runs are exported as OpenTelemetry traces (docs/telemetry.md): the OTLP/HTTP endpoint, the names of the headers sent (never their values), and how many traces were exported and dropped.',
      access: { auth: 'credential', scope: 'profile:read' },
      input: WorkspaceId,
      output: TelemetryDestination,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/telemetry', params: byId },
      mcp: { stepUp: true },
      run: (ctx, { workspaceId }) => getTelemetry(ctx.db, ctx.globalDb, ctx.actor, workspaceId),
    }),
    defineCapability({
      name: 'set-telemetry',
      title: 'Set the OpenTelemetry destination',
      description:
        'Sets the OTLP/HTTP endpoint (https, a public host) and headers the workspace’s runs are exported to as OpenTelemetry traces, or removes it (endpoint null); owners only. Headers omitted are kept; the counts start over.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId.extend(TelemetryBody.shape),
      output: TelemetryDestination,
      annotations: { ...WRITE, idempotentHint: true },
      http: { method: 'PUT', path: '/:id/telemetry', params: byId, summary: 'Set the OpenTelemetry destination (owners only)' },
      mcp: { stepUp: true },
      run: (ctx, { workspaceId, ...body }) => setTelemetry(ctx.db, ctx.globalDb, ctx.env, ctx.actor, workspaceId, body),
    }),
    defineCapability({
      name: 'get-retention',
      title: 'Get retention windows',
      description: 'How many days the workspace keeps its executions, traces, workflow runs, activity and audit log (defaults filled in).',
      access: { auth: 'credential', scope: 'profile:read' },
      input: WorkspaceId,
      output: RetentionWindows,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/retention', params: byId },
      // profile:read and profile:write reach far beyond retention: asked for when called, not at every MCP sign-in.
      mcp: { stepUp: true },
      run: (ctx, { workspaceId }) => getRetention(ctx.db, ctx.globalDb, ctx.actor, workspaceId),
    }),
    defineCapability({
      name: 'set-retention',
      title: 'Set retention windows',
      description: 'Sets the windows named, in days from 1 to the deployment maximum (owners only); older data is deleted within the hour.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId.extend(RetentionPatch.shape),
      output: RetentionWindows,
      annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
      http: { method: 'PUT', path: '/:id/retention', params: byId, summary: 'Set retention windows in days (owners only)' },
      mcp: { stepUp: true },
      run: (ctx, { workspaceId, ...patch }) => setRetention(ctx.db, ctx.globalDb, ctx.env, ctx.actor, workspaceId, patch),
    }),
    defineCapability({
      name: 'get-skill-guard',
      title: 'Get the skill version guard',
      description: 'Whether a new version of an authored skill must score at least as well as the current one in its eval before it becomes current.',
      access: { auth: 'credential', scope: 'profile:read' },
      input: WorkspaceId,
      output: SkillGuardSetting,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/skill-guard', params: byId },
      mcp: { stepUp: true },
      run: (ctx, { workspaceId }) => getSkillGuard(ctx.db, ctx.globalDb, ctx.actor, workspaceId),
    }),
    defineCapability({
      name: 'set-skill-guard',
      title: 'Set the skill version guard',
      description:
        'Turns the skill version guard on or off (owners only): with it on, a new version of an authored skill whose current version carries eval cases is evaluated first and becomes current only if its pass rate with the skill is not below the current version’s.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId.extend(SkillGuardBody.shape),
      output: SkillGuardSetting,
      annotations: { ...WRITE, idempotentHint: true },
      http: { method: 'PUT', path: '/:id/skill-guard', params: byId, summary: 'Turn the skill version guard on or off (owners only)' },
      mcp: { stepUp: true },
      run: (ctx, { workspaceId, ...body }) => setSkillGuard(ctx.db, ctx.globalDb, ctx.actor, workspaceId, body),
    }),
    defineCapability({
      name: 'delete-workspace',
      title: 'Delete a workspace',
      description:
        "Deletes the current workspace and everything in it (owners only; not a personal workspace), with its name typed back as `confirm`; answers the deletion's job.",
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId.extend(DeleteWorkspaceBody.shape),
      output: WorkspaceDeletion,
      annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
      http: {
        method: 'DELETE',
        path: '/:id',
        params: byId,
        body: DeleteWorkspaceBody,
        status: 202,
        summary: "Delete the workspace and everything in it (owners only; `confirm` is its name); answers the deletion's job",
      },
      mcp: false,
      run: (ctx, { workspaceId, ...body }) => requestDeletion(ctx.globalDb, ctx.env, ctx.actor, workspaceId, body),
    }),
    defineCapability({
      name: 'get-workspace-deletion',
      title: "Get a workspace's deletion",
      description: 'The deletion job of a workspace, to the person who asked for it, also once the workspace is gone.',
      access: { auth: 'credential', scope: 'profile:read' },
      input: WorkspaceId,
      output: WorkspaceDeletion,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/deletion', params: byId },
      mcp: false,
      run: (ctx, { workspaceId }) => getDeletion(ctx.globalDb, ctx.actor, workspaceId),
    }),
    defineCapability({
      name: 'start-export',
      title: 'Export the workspace',
      description:
        'Starts writing the whole workspace into one zip archive (owners only; docs/export.md), or answers the export already under way. Read the job until it is ready for its download link.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: WorkspaceId,
      output: ExportJob,
      annotations: WRITE,
      http: { method: 'POST', path: '/:id/export', params: byId, status: 201, summary: 'Start an export of the workspace (owners only)' },
      mcp: false,
      run: async (ctx, { workspaceId }) => {
        const { job, started } = await startExport(ctx.db, ctx.globalDb, ctx.env, ctx.actor, workspaceId, ctx.baseUrl);
        // Its object writes the archive in slices from an alarm; the housekeeping wakes it if this call fails.
        if (started !== null) await driveExport(ctx.env, workspaceId, started).catch(logFailure(started));
        return job;
      },
    }),
    defineCapability({
      name: 'get-export',
      title: 'Get an export',
      description: 'An export job; once ready, a download link that works for an hour (owners only).',
      access: { auth: 'credential', scope: 'profile:read' },
      input: WorkspaceId.extend({ exportId: z.string().min(1).max(40).describe('The export id (exp_<n>)') }),
      output: ExportJob,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/export/:exportId', params: byId },
      mcp: false,
      run: (ctx, { workspaceId, exportId }) => getExport(ctx.db, ctx.globalDb, ctx.env, ctx.actor, workspaceId, exportId, ctx.baseUrl),
    }),
  ],
};

/** Accepting an invitation: the signed-in person joins the workspace it names. */
export const invitationsArea: Area = {
  mount: '/api/v1/invitations',
  tag: 'Workspaces',
  capabilities: [
    defineCapability({
      name: 'accept-invitation',
      title: 'Accept an invitation',
      description: 'Accepts an invitation addressed to the signed-in email.',
      access: { auth: 'session' },
      input: AcceptInvitationBody,
      output: WorkspaceRecord,
      annotations: WRITE,
      http: { method: 'POST', path: '/accept', summary: 'Accept an invitation addressed to the signed-in email' },
      mcp: false,
      run: (ctx, body) => acceptInvitation(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, body),
    }),
  ],
};

/** The caller's API keys in the current workspace. */
export const apiKeysArea: Area = {
  mount: '/api/v1/api-keys',
  tag: 'API keys',
  capabilities: [
    defineCapability({
      name: 'list-api-keys',
      title: 'List API keys',
      description: "The caller's keys in this workspace (never the key itself).",
      access: { auth: 'credential', scope: 'agent:list' },
      input: CursorQuery,
      output: cursorEnvelope(ApiKeyRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listApiKeys(ctx.globalDb, ctx.actor, query),
    }),
    defineCapability({
      name: 'create-api-key',
      title: 'Create an API key',
      description: 'Creates a key bound to this workspace; `key` is shown only in this answer.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: CreateApiKeyBody,
      output: CreatedApiKey,
      annotations: WRITE,
      http: { method: 'POST', path: '/', status: 201, before: [idempotent], summary: 'Create a key bound to this workspace; `key` is shown only here' },
      mcp: false,
      run: (ctx, body) => createApiKey(ctx.globalDb, ctx.actor, body),
    }),
    defineCapability({
      name: 'revoke-api-key',
      title: 'Revoke an API key',
      description: 'Revokes a key; it fails from its next request on.',
      access: { auth: 'credential', scope: 'profile:write' },
      input: z.object({ keyId: z.string().min(1).max(40).describe('The key id') }),
      output: ApiKeyRecord,
      annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
      http: { method: 'POST', path: '/:id/revoke', params: { id: 'keyId' }, summary: 'Revoke a key; it fails from its next request on' },
      mcp: false,
      run: (ctx, { keyId }) => revokeApiKey(ctx.globalDb, ctx.env.CREDENTIAL_GATE, ctx.actor, keyId),
    }),
  ],
};
