import { raw } from 'hono/html';
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
input,select{box-sizing:border-box;width:100%;padding:.6rem;font:inherit;margin-top:.25rem}
button{font:inherit;padding:.6rem 1.2rem;margin:1.5rem .5rem 0 0;cursor:pointer}
button:focus-visible,input:focus-visible,select:focus-visible,a:focus-visible{outline:3px solid #2563eb;outline-offset:2px}
.error{border:2px solid #b91c1c;padding:.75rem;border-radius:.25rem}
ul.scopes{padding-left:1.2rem}
.sensitive{font-weight:600}
.badge{display:inline-block;border:1px solid currentColor;border-radius:.25rem;padding:0 .3rem;margin-left:.4rem;font-size:.8rem}
.muted{opacity:.8;font-size:.9rem}
`;

export const Layout: FC<{ title: string; nonce: string; children?: Child }> = ({ title, nonce, children }) => (
  <>
    {raw('<!doctype html>')}
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>{title} · Workspace AI Skills</title>
        <style nonce={nonce}>{CSS}</style>
      </head>
      <body>
        <main>{children}</main>
      </body>
    </html>
  </>
);

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

export const SignedInPage: FC<{ nonce: string; name: string; email: string }> = ({ nonce, name, email }) => (
  <Layout title="Signed in" nonce={nonce}>
    <h1>You are signed in</h1>
    <p>
      Signed in as {name} ({email}).
    </p>
  </Layout>
);

export interface ConsentProps {
  nonce: string;
  csrf: string;
  clientName: string;
  redirectHost: string;
  userName: string;
  scopes: { scope: string; words: string; sensitive: boolean }[];
  workspaces: { id: string; name: string }[];
  currentWorkspaceId: string;
  /** The authorize parameters, carried through the form and validated again on post. */
  params: Record<string, string>;
}

export const ConsentPage: FC<ConsentProps> = (p) => (
  <Layout title="Allow access?" nonce={p.nonce}>
    <h1>Allow {p.clientName} to use your account?</h1>
    <p>
      Signed in as {p.userName}. After you answer you go back to <strong>{p.redirectHost}</strong>.
    </p>
    <form method="post" action="/auth/oauth2/authorize">
      <input type="hidden" name="csrf" value={p.csrf} />
      {Object.entries(p.params).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <h2 id="scopes-heading">It will be able to:</h2>
      <ul class="scopes" aria-labelledby="scopes-heading">
        {p.scopes.map((s) => (
          <li class={s.sensitive ? 'sensitive' : undefined}>
            {s.words}
            {s.sensitive ? <span class="badge">sensitive</span> : null} <span class="muted">({s.scope})</span>
          </li>
        ))}
      </ul>
      {p.scopes.some((s) => s.sensitive) ? (
        <p class="muted">Items marked sensitive can change your data or spend your credits.</p>
      ) : null}
      <label for="workspace_id">In workspace</label>
      <select id="workspace_id" name="workspace_id">
        {p.workspaces.map((w) => (
          <option value={w.id} selected={w.id === p.currentWorkspaceId}>
            {w.name}
          </option>
        ))}
      </select>
      <button type="submit" name="decision" value="allow">
        Allow
      </button>
      <button type="submit" name="decision" value="deny">
        Deny
      </button>
    </form>
  </Layout>
);

export const MessagePage: FC<{ nonce: string; title: string; message: string }> = ({ nonce, title, message }) => (
  <Layout title={title} nonce={nonce}>
    <h1>{title}</h1>
    <p role="alert">{message}</p>
  </Layout>
);
