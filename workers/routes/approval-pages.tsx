import { Hono, type Context } from 'hono';
import type { Principal } from '../auth/principal';
import { ActivatePage, ApproveConsentPage, ApproveRequestPage, CodeEntryPage, MessagePage } from '../auth/pages';
import { asMemberOf, csrfToken, csrfValid, pagePrincipal, renderPage, signInThenReturn } from '../auth/web';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { approveConsent, denyConsent } from '../services/agent-consents';
import { findByLinkCode } from '../services/agent-link-codes';
import { approvePermissionRequest, denyPermissionRequest } from '../services/permission-requests';
import { confirmActivation, denyActivation, lookupActivation } from '../services/device-activation';
import { describeScope, workspacesOf } from '../services/oauth';

type Ctx = Context<AppEnv>;

const message = (c: Ctx, status: 200 | 400 | 403 | 404 | 409, title: string, text: string) =>
  renderPage(c, status, (nonce) => <MessagePage nonce={nonce} title={title} message={text} />);

const refused = (c: Ctx) => message(c, 403, 'Request refused', 'The form expired or came from another site. Go back, reload the page and try again.');

/** A page that needs a session sends the browser to sign in and back. */
const signIn = (c: Ctx) => signInThenReturn(c, c.req.path + new URL(c.req.url).search);

/** What the person reads when a code cannot be decided (the services' AppErrors). */
function problem(error: unknown): { status: 400 | 404 | 409; text: string } {
  if (!(error instanceof AppError)) throw error;
  if (error.code === 'NOT_FOUND') return { status: 404, text: 'No request has this code for your account. Check the code and try again.' };
  if (error.code === 'EXPIRED') return { status: 409, text: 'This request has expired. Start again on the device or agent.' };
  if (error.code === 'CONFLICT') return { status: 409, text: 'This request was already answered.' };
  return { status: 400, text: error.message };
}

const str = (v: unknown) => (typeof v === 'string' ? v.trim() : '');

/** A link code may belong to any of the person's workspaces: the one its key is in. */
async function findLinkCode(c: Ctx, principal: Principal, code: string) {
  let lastError: unknown = new AppError('NOT_FOUND', 404, 'Link code not found');
  for (const workspace of await workspacesOf(c.var.globalDb, principal.userId)) {
    const member = await asMemberOf(c.var.globalDb, principal, workspace.id);
    if (!member) continue;
    try {
      return { record: await findByLinkCode(c.var.globalDb, member, { link_code: code }), member, workspaceName: workspace.name };
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'NOT_FOUND') throw error;
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * `/activate` (the device flow's verification page, RFC 8628 3.3) and `/approve` (agent consents
 * and permission requests by link code, spec 5.5). Both call the same services as the app's
 * session routes; the forms carry the CSRF token.
 */
export const approvalPagesRoutes = new Hono<AppEnv>()
  .get('/activate', async (c) => {
    const principal = await pagePrincipal(c);
    if (!principal) return signIn(c);
    const userCode = str(c.req.query('user_code'));
    const entry = (status: 200 | 400 | 404 | 409, error?: string) =>
      renderPage(c, status, (nonce) => (
        <CodeEntryPage
          nonce={nonce}
          title="Connect a device"
          action="/activate"
          name="user_code"
          hint="Enter the code your device or agent shows."
          value={userCode}
          error={error}
        />
      ));
    if (!userCode) return entry(200);
    try {
      const record = await lookupActivation(c.var.globalDb, principal, userCode);
      const csrf = csrfToken(c);
      const workspaces = await workspacesOf(c.var.globalDb, principal.userId);
      return renderPage(c, 200, (nonce) => (
        <ActivatePage
          nonce={nonce}
          csrf={csrf}
          userCode={record.user_code}
          clientLabel={record.client_label}
          scopes={record.scopes.map(describeScope)}
          workspaces={workspaces}
          currentWorkspaceId={principal.workspaceId}
        />
      ));
    } catch (error) {
      const { status, text } = problem(error);
      return entry(status, text);
    }
  })
  .post('/activate', async (c) => {
    const form = await c.req.parseBody();
    if (!csrfValid(c, form.csrf)) return refused(c);
    const principal = await pagePrincipal(c);
    if (!principal) return signIn(c);
    const member = await asMemberOf(c.var.globalDb, principal, str(form.workspace_id) || principal.workspaceId);
    if (!member) return message(c, 403, 'Request refused', 'You are not a member of that workspace.');
    try {
      if (form.decision === 'approve') {
        const record = await confirmActivation(c.var.globalDb, member, str(form.user_code));
        return message(c, 200, 'Device connected', `“${record.client_label}” can now finish on the device. You can close this page.`);
      }
      const record = await denyActivation(c.var.globalDb, member, str(form.user_code));
      return message(c, 200, 'Device denied', `“${record.client_label}” was not connected.`);
    } catch (error) {
      const { status, text } = problem(error);
      return message(c, status, 'Could not answer', text);
    }
  })

  .get('/approve', async (c) => {
    const principal = await pagePrincipal(c);
    if (!principal) return signIn(c);
    const code = str(c.req.query('code'));
    const entry = (status: 200 | 400 | 404 | 409, error?: string) =>
      renderPage(c, status, (nonce) => (
        <CodeEntryPage
          nonce={nonce}
          title="Approve an agent"
          action="/approve"
          name="code"
          hint="Enter the link code the agent shows."
          value={code}
          error={error}
        />
      ));
    if (!code) return entry(200);
    try {
      const { record, workspaceName } = await findLinkCode(c, principal, code);
      if (record.status !== 'pending') {
        const text = record.status === 'expired' ? 'This request has expired.' : `This request was already answered (${record.status}).`;
        return message(c, 409, 'Nothing to approve', text);
      }
      const csrf = csrfToken(c);
      if (record.kind === 'consent') {
        return renderPage(c, 200, (nonce) => (
          <ApproveConsentPage
            nonce={nonce}
            csrf={csrf}
            code={code}
            agentName={record.agent_display_name}
            reason={record.reason}
            keyName={record.key.name}
            workspaceName={workspaceName}
            scopes={record.requested_scopes.map((s) => describeScope(s.scope))}
          />
        ));
      }
      return renderPage(c, 200, (nonce) => (
        <ApproveRequestPage
          nonce={nonce}
          csrf={csrf}
          code={code}
          keyName={record.key.name}
          workspaceName={workspaceName}
          reason={record.reason}
          scope={describeScope(record.scope)}
          requestedMode={record.requested_mode}
        />
      ));
    } catch (error) {
      const { status, text } = problem(error);
      return entry(status, text);
    }
  })
  .post('/approve', async (c) => {
    const form = await c.req.parseBody({ all: true });
    if (!csrfValid(c, form.csrf)) return refused(c);
    const principal = await pagePrincipal(c);
    if (!principal) return signIn(c);
    const approve = form.decision === 'approve';
    try {
      const { record, member } = await findLinkCode(c, principal, str(form.code));
      if (record.kind === 'consent') {
        if (!approve) {
          await denyConsent(c.var.globalDb, member, record.consent_id);
          return message(c, 200, 'Agent denied', `${record.agent_display_name} was not given access.`);
        }
        const picked = ([] as unknown[]).concat(form.scopes ?? []).filter((s): s is string => typeof s === 'string');
        if (picked.length === 0) return message(c, 400, 'Nothing selected', 'Select at least one permission to approve, or deny the request.');
        const approved = await approveConsent(c.var.globalDb, c.env.CREDENTIAL_GATE, member, record.consent_id, { scopes: picked });
        return message(c, 200, 'Agent approved', `${record.agent_display_name} may now use: ${(approved.granted_scopes ?? []).join(', ')}.`);
      }
      if (!approve) {
        await denyPermissionRequest(c.var.globalDb, member, record.request_id);
        return message(c, 200, 'Permission denied', `The key was not given ${record.scope}.`);
      }
      const mode = str(form.mode);
      const granted = await approvePermissionRequest(c.var.globalDb, c.env.CREDENTIAL_GATE, member, record.request_id, {
        mode: mode === 'persistent' || mode === 'session' || mode === 'one_time' ? mode : undefined,
      });
      return message(c, 200, 'Permission granted', `The key may use ${granted.scope} (${granted.mode?.replace('_', '-')}).`);
    } catch (error) {
      const { status, text } = problem(error);
      return message(c, status, 'Could not answer', text);
    }
  });
