import { displayText } from '../lib/display-text';
import type { RedirectTarget } from './oauth/redirect-uris';
import { HtmlDocument } from '../lib/html-document';
import type { Child, FC } from 'hono/jsx';

/**
 * Server-rendered pages (hono/jsx, no build step). Accessible by construction: one h1 per page,
 * every input has a label, errors are announced (role="alert") and tied to the form, the
 * language is declared, and nothing depends on script (the CSP allows none).
 */

const CSS = `
:root{color-scheme:light dark;font-family:system-ui,sans-serif;line-height:1.5}
body{margin:0;display:flex;justify-content:center;padding:2rem 1rem}
main{width:100%;max-width:28rem}
h1{font-size:1.5rem;margin:0 0 1rem}
label{display:block;font-weight:600;margin-top:1rem}
label.inline{display:inline;font-weight:normal}
fieldset{margin-top:1rem;border:1px solid #8884;border-radius:.25rem}
blockquote{margin:.5rem 0;padding-left:1rem;border-left:3px solid #8888;white-space:pre-wrap}
input:not([type=checkbox]):not([type=radio]),select{box-sizing:border-box;width:100%;padding:.6rem;font:inherit;margin-top:.25rem}
button{font:inherit;padding:.6rem 1.2rem;margin:1.5rem .5rem 0 0;cursor:pointer}
button:focus-visible,input:focus-visible,select:focus-visible,a:focus-visible{outline:3px solid #2563eb;outline-offset:2px}
.error{border:2px solid #b91c1c;padding:.75rem;border-radius:.25rem}
.warning{border:2px solid #b45309;padding:.75rem;border-radius:.25rem}
ul.scopes{padding-left:1.2rem}
.sensitive{font-weight:600}
.badge{display:inline-block;border:1px solid currentColor;border-radius:.25rem;padding:0 .3rem;margin-left:.4rem;font-size:.8rem}
.muted{opacity:.8;font-size:.9rem}
.host{font-size:1.3em;font-weight:800;word-break:break-all}
ul.choices{list-style:none;padding-left:0}
pre{overflow-x:auto;padding:.75rem;border:1px solid #8884;border-radius:.25rem}
`;

export const Layout: FC<{ title: string; nonce: string; head?: Child; children?: Child }> = ({ title, nonce, head, children }) => (
  <HtmlDocument
    title={title}
    head={
      <>
        {head}
        <style nonce={nonce}>{CSS}</style>
      </>
    }
  >
    <body>
      <main>{children}</main>
    </body>
  </HtmlDocument>
);

/**
 * Text an application or agent chose about itself, shown to the person deciding: hidden and
 * reordering characters made visible, and isolated (`bdi`) so right-to-left text in it cannot
 * move the words of the sentence around it.
 */
const Claimed: FC<{ text: string; lines?: boolean }> = ({ text, lines }) => <bdi>{displayText(text, { lines: lines ?? false })}</bdi>;

const ErrorNote: FC<{ message?: string | undefined }> = ({ message }) =>
  message ? (
    <p class="error" role="alert" id="form-error">
      {message}
    </p>
  ) : null;

export interface SignInProps {
  nonce: string;
  csrf: string;
  next: string;
  email?: string;
  error?: string;
}

export const SignInPage: FC<SignInProps> = ({ nonce, csrf, next, email, error }) => (
  <Layout title="Sign in" nonce={nonce}>
    <h1>Sign in</h1>
    <ErrorNote message={error} />
    <form method="post" action="/auth/sign-in" aria-describedby={error ? 'form-error' : undefined}>
      <input type="hidden" name="csrf" value={csrf} />
      <input type="hidden" name="next" value={next} />
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="email" required value={email ?? ''} />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      <button type="submit">Sign in</button>
    </form>
    <p>
      No account yet? <a href={`/auth/sign-up?next=${encodeURIComponent(next)}`}>Create one</a>
    </p>
  </Layout>
);

export interface SignUpProps {
  nonce: string;
  csrf: string;
  next: string;
  email?: string;
  name?: string;
  error?: string;
}

export const SignUpPage: FC<SignUpProps> = ({ nonce, csrf, next, email, name, error }) => (
  <Layout title="Create an account" nonce={nonce}>
    <h1>Create an account</h1>
    <ErrorNote message={error} />
    <form method="post" action="/auth/sign-up" aria-describedby={error ? 'form-error' : undefined}>
      <input type="hidden" name="csrf" value={csrf} />
      <input type="hidden" name="next" value={next} />
      <label for="name">Name</label>
      <input id="name" name="name" type="text" autocomplete="name" required maxlength={100} value={name ?? ''} />
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="email" required value={email ?? ''} />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="new-password" required minlength={8} aria-describedby="password-hint" />
      <p id="password-hint" class="muted">
        At least 8 characters.
      </p>
      <button type="submit">Create account</button>
    </form>
    <p>
      Already have an account? <a href={`/auth/sign-in?next=${encodeURIComponent(next)}`}>Sign in</a>
    </p>
  </Layout>
);

export const SignedInPage: FC<{ nonce: string; csrf: string; name: string; email: string }> = ({ nonce, csrf, name, email }) => (
  <Layout title="Signed in" nonce={nonce}>
    <h1>You are signed in</h1>
    <p>
      Signed in as {name} ({email}).
    </p>
    <form method="post" action="/auth/sign-out">
      <input type="hidden" name="csrf" value={csrf} />
      <button type="submit">Sign out</button>
    </form>
  </Layout>
);

export interface ConsentProps {
  nonce: string;
  csrf: string;
  clientName: string;
  target: RedirectTarget;
  userName: string;
  scopes: ScopeLine[];
  workspaces: { id: string; name: string }[];
  currentWorkspaceId: string;
  /** The authorize parameters, carried through the form and validated again on post. */
  params: Record<string, string>;
}

/**
 * Anyone can register a client under any name, so the name is shown as the client's claim and
 * where the answer goes is shown larger: the host of a site, which the client cannot fake; or
 * the scheme of an app on the device, which any installed app can claim, so the page says so.
 */
export const ConsentPage: FC<ConsentProps> = (p) => {
  const target = p.target.kind === 'site' ? p.target.host : `${p.target.scheme}:`;
  return (
    <Layout title="Allow access?" nonce={p.nonce}>
      <h1>
        {p.target.kind === 'site' ? 'Allow an app at ' : 'Allow the app that opens '}
        <span class="host">{target}</span>
        {p.target.kind === 'site' ? ' to use your account?' : ' links to use your account?'}
      </h1>
      <p>
        It calls itself “<Claimed text={p.clientName} />
        ”. Signed in as {p.userName}. After you answer you go back to{' '}
        {p.target.kind === 'site' ? (
          <strong>{target}</strong>
        ) : (
          <>
            the app on your device that opens <strong>{target}</strong> links
          </>
        )}
        .
      </p>
      {p.target.kind === 'app' ? (
        <p class="warning" id="unverified-app">
          Any app installed on your device can claim <strong>{target}</strong> links: this service cannot check which app that is. Allow only if you started
          this sign-in yourself, just now, from the app you expect.
        </p>
      ) : null}
      <DecisionForm action="/auth/oauth2/authorize" csrf={p.csrf} fields={p.params} approve={{ value: 'allow', label: 'Allow' }} deny="deny">
        <ScopeChoices legend="It will be able to (untick what you do not want to allow):" scopes={p.scopes} />
        {p.scopes.some((s) => s.sensitive) ? <p class="muted">Items marked sensitive can change your data or spend your credits.</p> : null}
        <WorkspacePicker workspaces={p.workspaces} current={p.currentWorkspaceId} />
      </DecisionForm>
    </Layout>
  );
};

/**
 * The form of every decision a person takes on these pages (an OAuth consent, a device
 * activation, an agent's consent or permission request): the CSRF token and the fields that
 * name what is decided, the choices in between, then the two answers, posted as `decision`.
 */
const DecisionForm: FC<{
  action: string;
  csrf: string;
  fields: Record<string, string>;
  approve: { value: string; label: string };
  deny: string;
  children?: Child;
}> = (p) => (
  <form method="post" action={p.action}>
    <input type="hidden" name="csrf" value={p.csrf} />
    {Object.entries(p.fields).map(([name, value]) => (
      <input type="hidden" name={name} value={value} />
    ))}
    {p.children}
    <button type="submit" name="decision" value={p.approve.value}>
      {p.approve.label}
    </button>
    <button type="submit" name="decision" value={p.deny}>
      Deny
    </button>
  </form>
);

/**
 * After consent to a native app (private-use scheme redirect): the browser hands the app's URL
 * to the app and leaves the tab as it was, so this page says what happened. It sends the
 * browser there itself (a refresh, which needs no script), and links there in case the browser
 * asks before opening an app and the person dismissed it. The URL carries the code or the
 * denial, and it appears nowhere else.
 */
export const ReturnToAppPage: FC<{ nonce: string; clientName: string; scheme: string; url: string; allowed: boolean }> = (p) => (
  <Layout
    title={p.allowed ? 'Access allowed' : 'Access not granted'}
    nonce={p.nonce}
    // Unquoted, the whole rest of the value is the URL (HTML "shared declarative refresh steps").
    head={<meta http-equiv="refresh" content={`0;url=${p.url}`} />}
  >
    <h1>
      {p.allowed ? (
        <>
          You can return to <Claimed text={p.clientName} /> now
        </>
      ) : (
        'Access was not granted; you can close this tab'
      )}
    </h1>
    <p role="status">
      {p.allowed ? 'Access is allowed. ' : 'The app is told that you denied access. '}
      Your browser is handing the answer to the app that opens <strong>{p.scheme}:</strong> links; if it asks whether to open it, allow it.
    </p>
    <p>
      <a href={p.url} rel="noreferrer">
        Open <Claimed text={p.clientName} />
      </a>
    </p>
  </Layout>
);

export const MessagePage: FC<{ nonce: string; title: string; message: string }> = ({ nonce, title, message }) => (
  <Layout title={title} nonce={nonce}>
    <h1>{title}</h1>
    <p role="alert">{message}</p>
  </Layout>
);

type ScopeLine = { scope: string; words: string; sensitive: boolean };

const ScopeItem: FC<{ s: ScopeLine }> = ({ s }) => (
  <>
    {s.words}
    {s.sensitive ? <span class="badge">sensitive</span> : null} <span class="muted">({s.scope})</span>
  </>
);

/** The scopes a consent grants, under its heading; sensitive ones marked. */
const ScopeList: FC<{ heading: string; scopes: ScopeLine[] }> = ({ heading, scopes }) => (
  <>
    <h2 id="scopes-heading">{heading}</h2>
    <ul class="scopes" aria-labelledby="scopes-heading">
      {scopes.map((s) => (
        <li class={s.sensitive ? 'sensitive' : undefined}>
          <ScopeItem s={s} />
        </li>
      ))}
    </ul>
  </>
);

/** Checkboxes for the scopes a person may narrow before approving, all ticked; posted as `scopes`. */
const ScopeChoices: FC<{ legend: string; scopes: ScopeLine[] }> = ({ legend, scopes }) => (
  <fieldset>
    <legend>{legend}</legend>
    <ul class="scopes choices">
      {scopes.map((s, i) => (
        <li class={s.sensitive ? 'sensitive' : undefined}>
          <input type="checkbox" id={`scope-${i}`} name="scopes" value={s.scope} checked />{' '}
          <label for={`scope-${i}`} class={s.sensitive ? 'inline sensitive' : 'inline'}>
            <ScopeItem s={s} />
          </label>
        </li>
      ))}
    </ul>
  </fieldset>
);

/** A code entry form: `/activate` (user code) and `/approve` (link code) alike. */
export const CodeEntryPage: FC<{ nonce: string; title: string; action: string; name: string; hint: string; value?: string; error?: string }> = (p) => (
  <Layout title={p.title} nonce={p.nonce}>
    <h1>{p.title}</h1>
    <ErrorNote message={p.error} />
    <form method="get" action={p.action}>
      <label for="code">Code</label>
      <input
        id="code"
        name={p.name}
        type="text"
        required
        autocomplete="one-time-code"
        autocapitalize="characters"
        spellcheck={false}
        pattern="[A-Za-z]{4}[- ]?[A-Za-z]{4}"
        placeholder="XXXX-XXXX"
        value={p.value ?? ''}
        aria-describedby="code-hint"
      />
      <p id="code-hint" class="muted">
        {p.hint}
      </p>
      <button type="submit">Continue</button>
    </form>
  </Layout>
);

export const WorkspacePicker: FC<{ workspaces: { id: string; name: string }[]; current: string }> = ({ workspaces, current }) => (
  <>
    <label for="workspace_id">In workspace</label>
    <select id="workspace_id" name="workspace_id">
      {workspaces.map((w) => (
        <option value={w.id} selected={w.id === current}>
          {w.name}
        </option>
      ))}
    </select>
  </>
);

export interface ActivateProps {
  nonce: string;
  csrf: string;
  userCode: string;
  clientLabel: string;
  scopes: ScopeLine[];
  workspaces: { id: string; name: string }[];
  currentWorkspaceId: string;
}

/** RFC 8628 3.3: the person checks the code shown on the device, then approves or denies. */
export const ActivatePage: FC<ActivateProps> = (p) => (
  <Layout title="Connect a device" nonce={p.nonce}>
    <h1>
      Connect “<Claimed text={p.clientLabel} />
      ”?
    </h1>
    <p>
      Check that the device shows the code <strong>{p.userCode}</strong>. If you did not start this, deny it.
    </p>
    <DecisionForm action="/activate" csrf={p.csrf} fields={{ user_code: p.userCode }} approve={{ value: 'approve', label: 'Approve' }} deny="deny">
      <ScopeList heading="It gets an API key that can:" scopes={p.scopes} />
      <WorkspacePicker workspaces={p.workspaces} current={p.currentWorkspaceId} />
    </DecisionForm>
  </Layout>
);

export interface ApproveConsentProps {
  nonce: string;
  csrf: string;
  code: string;
  agentName: string;
  reason: string;
  keyName: string;
  workspaceName: string;
  scopes: ScopeLine[];
}

/** An agent's connect request (spec 3.3): every scope pre-ticked; unticking narrows the grant. */
export const ApproveConsentPage: FC<ApproveConsentProps> = (p) => (
  <Layout title="Approve an agent" nonce={p.nonce}>
    <h1>
      <Claimed text={p.agentName} /> asks for access
    </h1>
    <p>
      Key “<Claimed text={p.keyName} />” in {p.workspaceName}. The agent says:
    </p>
    <blockquote>
      <Claimed text={p.reason} lines />
    </blockquote>
    <DecisionForm action="/approve" csrf={p.csrf} fields={{ code: p.code }} approve={{ value: 'approve', label: 'Approve selected' }} deny="deny">
      <ScopeChoices legend="Allow it to:" scopes={p.scopes} />
    </DecisionForm>
  </Layout>
);

export interface ApproveRequestProps {
  nonce: string;
  csrf: string;
  code: string;
  keyName: string;
  workspaceName: string;
  reason: string;
  scope: ScopeLine;
  requestedMode: string;
}

const MODE_WORDS: Record<string, string> = {
  persistent: 'Always (until you revoke it)',
  session: 'For one hour',
  one_time: 'Once (within 5 minutes)',
};

/** A permission request (spec 3.4, 5.5): one scope, the agent's reason, and how long. */
export const ApproveRequestPage: FC<ApproveRequestProps> = (p) => (
  <Layout title="Approve a permission" nonce={p.nonce}>
    <h1>
      Key “<Claimed text={p.keyName} />” asks for one more permission
    </h1>
    <p>In {p.workspaceName}. The agent says:</p>
    <blockquote>
      <Claimed text={p.reason} lines />
    </blockquote>
    <p class={p.scope.sensitive ? 'sensitive' : undefined}>
      <ScopeItem s={p.scope} />
    </p>
    <DecisionForm action="/approve" csrf={p.csrf} fields={{ code: p.code }} approve={{ value: 'approve', label: 'Approve' }} deny="deny">
      <fieldset>
        <legend>For how long?</legend>
        {Object.entries(MODE_WORDS).map(([mode, words]) => (
          <div>
            <input type="radio" id={`mode-${mode}`} name="mode" value={mode} checked={mode === p.requestedMode} />{' '}
            <label for={`mode-${mode}`} class="inline">
              {words}
            </label>
          </div>
        ))}
      </fieldset>
    </DecisionForm>
  </Layout>
);
