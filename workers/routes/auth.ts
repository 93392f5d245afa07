import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { clearSessionCookie, csrfValid, sessionCookie } from '../auth/web';
import { forbidden, unauthorized } from '../errors';
import { validate } from '../middleware/validate';
import { SessionResponse, signIn, SignInBody, signOut, signUp, SignUpBody } from '../services/accounts';
import { throttledSignIn, throttleSignUp } from '../auth/sign-in-throttle';
import { authPagesRoutes } from './auth-pages';
import { oauthRoutes } from './oauth';
import { documented } from './openapi';

const SignedOut = z.object({ success: z.literal(true) });

/**
 * Everything under /auth: accounts and sessions (docs/auth.md; the token is sent back as
 * `x-auth-token`), then the sign-in pages and the OAuth endpoints.
 */
export const authRoutes = new Hono<AppEnv>()
  .post(
    '/sign-up/email',
    documented('Auth', 'Create an account, its personal workspace and a session', 201, SessionResponse),
    validate('json', SignUpBody),
    async (c) => {
      await throttleSignUp(c.env, c.var.origin.ip);
      const welcomeCredits = Math.round((Number(c.env.WELCOME_CREDITS) || 0) * 100);
      return c.json(await signUp(c.var.globalDb, c.env, c.req.valid('json'), c.var.origin, welcomeCredits), 201);
    },
  )
  .post('/sign-in/email', documented('Auth', 'Start a session', 200, SessionResponse), validate('json', SignInBody), async (c) => {
    const input = c.req.valid('json');
    return c.json(await throttledSignIn(c.env, c.var.origin.ip, input.email, () => signIn(c.var.globalDb, input, c.var.origin)));
  })
  .post('/sign-out', documented('Auth', 'End the session of x-auth-token', 200, SignedOut), async (c) => {
    const token = c.req.header('x-auth-token');
    const cookie = sessionCookie(c);
    // The signed-in page's form: the cookie session, CSRF-checked, then back to the sign-in page.
    if (!token && cookie && c.req.header('content-type')?.startsWith('application/x-www-form-urlencoded')) {
      const form = await c.req.parseBody();
      if (!csrfValid(c, form.csrf)) throw forbidden('The form expired or came from another site');
      await signOut(c.var.globalDb, c.env.CREDENTIAL_GATE, cookie);
      clearSessionCookie(c);
      return c.redirect('/auth/sign-in', 303);
    }
    if (!token) throw unauthorized('Send the session token in x-auth-token');
    await signOut(c.var.globalDb, c.env.CREDENTIAL_GATE, token);
    return c.json({ success: true as const });
  })
  .route('/', authPagesRoutes)
  .route('/', oauthRoutes);
