import { AppError } from '../errors';
import { UnknownSecretError } from './run-secrets';

/** A tool's refusal as the model sees it: the service's own message, never an internal one. */
export const failed = (error: unknown, fallback = 'The tool failed') => ({
  content: error instanceof AppError || error instanceof UnknownSecretError ? error.message : fallback,
  isError: true,
});
