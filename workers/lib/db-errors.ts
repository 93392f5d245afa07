/** D1 surfaces SQLite constraint failures only through the message text (or its cause's). */
const failureText = (error: unknown) => (error instanceof Error ? `${error.message} ${String(error.cause ?? '')}` : '');

/** Whether `error` is a `kind` constraint failure, on `column` (`table.column`) if given. */
export const isConstraintFailure = (error: unknown, kind: 'UNIQUE' | 'NOT NULL' | 'CHECK' | 'FOREIGN KEY', column?: string): boolean =>
  failureText(error).includes(column ? `${kind} constraint failed: ${column}` : `${kind} constraint failed`);

export const isUniqueViolation = (error: unknown): boolean => isConstraintFailure(error, 'UNIQUE');
