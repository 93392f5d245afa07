import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { clearSessionCookie, csrfValid, sessionCookie } from '../auth/web';
import { AppError, forbidden, unauthorized } from '../errors';
import { hitRateLimit } from '../lib/rate-limit';
import { validate } from '../middleware/validate';
import { SessionResponse, signIn, SignInBody, signOut, signUp, SignUpBody } from '../services/accounts';
import { documented } from './openapi';

/** Password guessing is slowed per account and per address. */
const SIGN_IN_WINDOW_MS = 15 * 60_000;
const SIGN_IN_PER_ACCOUNT = 10;
const SIGN_IN_PER_IP = 60;
const SIGN_UP_PER_IP = 20;

async function throttle(env: AppEnv['Bindings'], subject: string, limit: number) {
  const decision = await hitRateLimit(env, subject, limit, SIGN_IN_WINDOW_MS);
  if (!decision.allowed) {
    const retryAfterSeconds = Math.ceil(decision.resetMs / 1000);
    throw new AppError('RATE_LIMITED', 429, 'Too many attempts; try again later', { retryAfterSeconds });
  }
}

/** The API and the sign-in pages count attempts together. */
export async function throttleSignIn(env: AppEnv['Bindings'], ip: string | null, email: string) {
  await throttle(env, `signin:ip:${ip ?? 'unknown'}`, SIGN_IN_PER_IP);
  await throttle(env, `signin:account:${email}`, SIGN_IN_PER_ACCOUNT);
}

export const throttleSignUp = (env: AppEnv['Bindings'], ip: string | null) => throttle(env, `signup:ip:${ip ?? 'unknown'}`, SIGN_UP_PER_IP);

const SignedOut = z.object({ success: z.literal(true) });

/** Accounts and sessions (docs/auth.md). The token is sent back as `x-auth-token`. */
export const auth = new Hono<AppEnv>()
  .post('/sign-up/email', documented('Auth', 'Create an account, its personal workspace and a session', 201, SessionResponse), validate('json', SignUpBody), async (c) => {
    await throttleSignUp(c.env, c.var.origin.ip);
    const welcomeCredits = Math.round((Number(c.env.WELCOME_CREDITS) || 0) * 100);
    return c.json(await signUp(c.var.db, c.req.valid('json'), c.var.origin, welcomeCredits), 201);
  })
  .post('/sign-in/email', documented('Auth', 'Start a session', 200, SessionResponse), validate('json', SignInBody), async (c) => {
    const { email } = c.req.valid('json');
    await throttleSignIn(c.env, c.var.origin.ip, email);
    return c.json(await signIn(c.var.db, c.req.valid('json'), c.var.origin));
  })
  .post('/sign-out', documented('Auth', 'End the session of x-auth-token', 200, SignedOut), async (c) => {
    const token = c.req.header('x-auth-token');
    const cookie = sessionCookie(c);
    // The signed-in page's form: the cookie session, CSRF-checked, then back to the sign-in page.
    if (!token && cookie && c.req.header('content-type')?.startsWith('application/x-www-form-urlencoded')) {
      const form = await c.req.parseBody();
      if (!csrfValid(c, form.csrf)) throw forbidden('The form expired or came from another site');
      await signOut(c.var.db, cookie);
      clearSessionCookie(c);
      return c.redirect('/auth/sign-in', 303);
    }
    if (!token) throw unauthorized('Send the session token in x-auth-token');
    await signOut(c.var.db, token);
    return c.json({ success: true as const });
  });
