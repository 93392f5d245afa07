import { AppError } from '../errors';
import { HtmlDocument } from './html-document';

/**
 * The page a browser lands on after Stripe Checkout when a native client passed the
 * `/api/v1/billing/return/<outcome>` URLs (spec 4.9 rule 3): it hands over to the app's deep
 * link, with a link to tap where the automatic redirect is blocked. It grants nothing (rule 2).
 */

export const RETURN_OUTCOMES = ['success', 'cancel'] as const;
export type ReturnOutcome = (typeof RETURN_OUTCOMES)[number];

export const DEFAULT_APP_SCHEME = 'workspaceskills';

/** RFC 3986 scheme syntax: also what keeps the setting from carrying markup into the page. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]{0,63}$/;

const TEXT: Record<ReturnOutcome, { title: string; body: string }> = {
  success: { title: 'Payment received', body: 'Your Ds are added as soon as Stripe confirms the payment.' },
  cancel: { title: 'Payment cancelled', body: 'Nothing was charged.' },
};

const CSS =
  'body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;text-align:center}a{display:inline-block;margin-top:1rem;padding:.75rem 1.5rem;border-radius:.5rem;background:#111;color:#fff;text-decoration:none}';

/** `{APP_SCHEME}://payment-success` or `…://payment-cancel`; 503 naming APP_SCHEME if it is not a scheme. */
export function appDeepLink(appScheme: string | undefined, outcome: ReturnOutcome): string {
  const scheme = appScheme?.trim() || DEFAULT_APP_SCHEME;
  if (!SCHEME.test(scheme)) {
    throw new AppError('SERVICE_UNAVAILABLE', 503, 'APP_SCHEME is not a URI scheme (a letter, then letters, digits, +, - or .)', { setting: 'APP_SCHEME' });
  }
  return `${scheme}://payment-${outcome}`;
}

/** The page itself: it opens `deepLink` at once, and offers it as a link where a browser blocks that. */
export const returnPage = (deepLink: string, outcome: ReturnOutcome) => {
  const { title, body } = TEXT[outcome];
  return (
    <HtmlDocument
      title={title}
      head={
        <>
          <meta http-equiv="refresh" content={`0;url=${deepLink}`} />
          <style>{CSS}</style>
        </>
      }
    >
      <body>
        <main>
          <h1>{title}</h1>
          <p>{body}</p>
          <a href={deepLink}>Return to the app</a>
        </main>
      </body>
    </HtmlDocument>
  );
};
