/** D1 surfaces SQLite constraint failures only through the message text. */
export const isUniqueViolation = (error: unknown): boolean =>
  error instanceof Error && /UNIQUE constraint failed/i.test(`${error.message} ${String(error.cause ?? '')}`);
