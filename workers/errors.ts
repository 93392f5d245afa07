import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** The error codes of spec section 7.2: clients branch on these, never on messages. */
export type ErrorCode =
  | 'UNAUTHORIZED'
  | 'RATE_LIMITED'
  | 'NOT_FOUND'
  | 'INVALID_INPUT'
  | 'INVALID_CONNECTOR'
  | 'EXECUTION_FAILED'
  | 'EXECUTION_RUNNING'
  | 'INSUFFICIENT_CREDITS'
  | 'CONNECTOR_NOT_CONFIGURED'
  | 'CONNECTOR_NOT_CONNECTED'
  | 'ALREADY_EXISTS'
  | 'EXPIRED'
  | 'CONFLICT'
  | 'VALIDATION_FAILED'
  | 'FORBIDDEN'
  | 'INTERNAL_ERROR'
  | 'ACTIVATION_REQUIRED'
  | 'SERVICE_UNAVAILABLE';

export type ErrorDetails = Record<string, unknown>;

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details?: ErrorDetails };
}

/**
 * The one error type services and middleware throw. `app.onError` turns it into the
 * spec's envelope; `extra` carries the few top-level siblings the spec requires
 * (for example `isRunning: true` beside `error`).
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: ContentfulStatusCode,
    message: string,
    readonly details?: ErrorDetails,
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  toEnvelope(): ErrorEnvelope & Record<string, unknown> {
    const error = this.details ? { code: this.code, message: this.message, details: this.details } : { code: this.code, message: this.message };
    return { ...this.extra, error };
  }
}

/** The Retry-After header of an error that says when to try again (`details.retryAfterSeconds`). */
export const retryAfterHeader = (error: AppError): Record<string, string> =>
  typeof error.details?.retryAfterSeconds === 'number' ? { 'retry-after': String(error.details.retryAfterSeconds) } : {};

export const invalidInput = (field: string, rule: string, message: string, details?: ErrorDetails) =>
  new AppError('INVALID_INPUT', 400, message, { field, rule, ...details });

export const notFound = (what: string) => new AppError('NOT_FOUND', 404, `${what} not found`);

export const unauthorized = (message = 'A valid API key, session token or access token is required') => new AppError('UNAUTHORIZED', 401, message);

export const forbidden = (message: string, details?: ErrorDetails) => new AppError('FORBIDDEN', 403, message, details);

/** Seconds a client is told to wait before writing again to a workspace whose move fences its writes. */
export const MOVE_RETRY_AFTER_SECONDS = 5;

/** A write while a move of the workspace to another database fences it (docs/operations.md, Moving a workspace). */
export const workspaceMoving = () =>
  new AppError('SERVICE_UNAVAILABLE', 503, 'This workspace is being moved to another database; try again shortly.', {
    retryAfterSeconds: MOVE_RETRY_AFTER_SECONDS,
  });

export const conflict = (message: string, details?: ErrorDetails) => new AppError('CONFLICT', 409, message, details);
