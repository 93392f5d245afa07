/**
 * The service's one clock. Everything that compares or stamps time calls `now()`, so tests
 * can move time forward (expiry, rate-limit windows) without sleeping.
 */
let offsetMs = 0;
let frozenAtMs: number | undefined;

export const now = (): number => (frozenAtMs ?? Date.now()) + offsetMs;

/** Waits `ms` of real time (a test's shift of the clock does not shorten it), or until `signal` aborts. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    // Whichever comes first also removes the other, so a long-lived signal collects no listeners.
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

export const isoNow = (): string => new Date(now()).toISOString();

export const toIso = (ms: number): string => new Date(ms).toISOString();

/** Test hook: shifts the clock of this isolate by `ms`. */
export const advanceClock = (ms: number): void => {
  offsetMs += ms;
};

/**
 * Test hook: stops this isolate's clock where it is (advanceClock still moves it), so a test of
 * waits counted in seconds reads the same however slowly the machine runs it.
 */
export const freezeClock = (): void => {
  frozenAtMs = Date.now();
};

export const resetClock = (): void => {
  offsetMs = 0;
  frozenAtMs = undefined;
};
