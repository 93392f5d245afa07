import { Hono, type Context } from 'hono';
import { SignedInPage, SignInPage, SignUpPage, MessagePage } from '../auth/pages';
import { csrfToken, csrfValid, pagePrincipal, renderPage, safeNext, setSessionCookie } from '../auth/web';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { signIn, SignInBody, signUp, SignUpBody, userOf } from '../services/accounts';
import { throttledSignIn, throttleSignUp } from '../auth/sign-in-throttle';

type Ctx = Context<AppEnv>;
type Status = 200 | 400 | 401 | 403 | 409 | 429;

const refused = (c: Ctx) =>
  renderPage(c, 403, (nonce) => (
    <MessagePage nonce={nonce} title="Request refused" message="The form expired or came from another site. Go back, reload the page and try again." />
  ));

/** "12 seconds", "3 minutes": how long to wait, as a person reads it. */
const waitWords = (seconds: number) =>
  seconds < 60 ? `${seconds} second${seconds === 1 ? '' : 's'}` : `${Math.ceil(seconds / 60)} minute${seconds > 60 ? 's' : ''}`;

/** The message a person sees for a failed sign-in or sign-up, and its status. */
function failure(c: Ctx, error: unknown, fallback: string): { status: Status; message: string } {
  if (!(error instanceof AppError)) throw error;
  if (error.code === 'RATE_LIMITED') {
    const seconds = Number(error.details?.retryAfterSeconds) || 60;
    c.header('retry-after', String(seconds));
    return { status: 429, message: `Too many attempts. Wait ${waitWords(seconds)} and try again.` };
  }
  if (error.code === 'ALREADY_EXISTS') return { status: 409, message: 'An account with this email already exists. Sign in instead.' };
  if (error.code === 'UNAUTHORIZED') return { status: 401, message: 'Email or password is incorrect.' };
  return { status: 400, message: fallback };
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/**
 * Sign-in and sign-up pages: they start the same session
 * as the JSON API, in the session cookie, and send the browser on to `next` (a path here only).
 */
export const authPagesRoutes = new Hono<AppEnv>()
  .get('/sign-in', async (c) => {
    const next = safeNext(c, c.req.query('next'));
    const principal = await pagePrincipal(c);
    if (principal && c.req.query('next')) return c.redirect(next, 302);
    if (principal) {
      const user = await userOf(c.var.globalDb, principal.userId);
      const csrf = csrfToken(c);
      return renderPage(c, 200, (nonce) => <SignedInPage nonce={nonce} csrf={csrf} name={user?.name ?? ''} email={user?.email ?? ''} />);
    }
    const csrf = csrfToken(c);
    return renderPage(c, 200, (nonce) => <SignInPage nonce={nonce} csrf={csrf} next={next} />);
  })
  .post('/sign-in', async (c) => {
    const form = await c.req.parseBody();
    if (!csrfValid(c, form.csrf)) return refused(c);
    const next = safeNext(c, form.next);
    const csrf = csrfToken(c);
    const again = (status: Status, error: string) =>
      renderPage(c, status, (nonce) => <SignInPage nonce={nonce} csrf={csrf} next={next} email={str(form.email)} error={error} />);
    const input = SignInBody.safeParse({ email: form.email, password: form.password });
    if (!input.success) return again(400, 'Enter your email address and password.');
    try {
      const session = await throttledSignIn(c.env, c.var.origin.ip, input.data.email, () => signIn(c.var.globalDb, input.data, c.var.origin));
      setSessionCookie(c, session.token);
      return c.redirect(next, 303);
    } catch (error) {
      const { status, message } = failure(c, error, 'Sign-in failed.');
      return again(status, message);
    }
  })
  .get('/sign-up', async (c) => {
    const next = safeNext(c, c.req.query('next'));
    const csrf = csrfToken(c);
    return renderPage(c, 200, (nonce) => <SignUpPage nonce={nonce} csrf={csrf} next={next} />);
  })
  .post('/sign-up', async (c) => {
    const form = await c.req.parseBody();
    if (!csrfValid(c, form.csrf)) return refused(c);
    const next = safeNext(c, form.next);
    const csrf = csrfToken(c);
    const again = (status: Status, error: string) =>
      renderPage(c, status, (nonce) => <SignUpPage nonce={nonce} csrf={csrf} next={next} email={str(form.email)} name={str(form.name)} error={error} />);
    const input = SignUpBody.safeParse({ email: form.email, password: form.password, name: form.name });
    if (!input.success) {
      const field = String(input.error.issues[0]?.path[0] ?? '');
      const message =
        field === 'password' ? 'The password needs at least 8 characters.' : field === 'email' ? 'Enter a valid email address.' : 'Enter your name.';
      return again(400, message);
    }
    try {
      await throttleSignUp(c.env, c.var.origin.ip);
      const welcomeCredits = Math.round((Number(c.env.WELCOME_CREDITS) || 0) * 100);
      const session = await signUp(c.var.globalDb, c.env, input.data, c.var.origin, welcomeCredits);
      setSessionCookie(c, session.token);
      return c.redirect(next, 303);
    } catch (error) {
      const { status, message } = failure(c, error, 'The account could not be created.');
      return again(status, message);
    }
  });
