/**
 * The service's one clock. Everything that compares or stamps time calls `now()`, so tests
 * can move time forward (expiry, rate-limit windows) without sleeping.
 */
let offsetMs = 0;

export const now = (): number => Date.now() + offsetMs;

export const isoNow = (): string => new Date(now()).toISOString();

export const toIso = (ms: number): string => new Date(ms).toISOString();

/** Test hook: shifts the clock of this isolate by `ms`. */
export const advanceClock = (ms: number): void => {
  offsetMs += ms;
};

export const resetClock = (): void => {
  offsetMs = 0;
};
