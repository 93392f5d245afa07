import { AppError } from '../errors';
import { SecretUseError } from './run-secrets';

/** A tool's refusal as the model sees it: the service's own message, never an internal one. */
export const failed = (error: unknown, fallback = 'The tool failed') => ({
  content: error instanceof AppError || error instanceof SecretUseError ? error.message : fallback,
  isError: true,
});
