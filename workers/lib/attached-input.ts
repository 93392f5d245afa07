/** The most a run's input may carry, its attached files included. */
export const MAX_RUN_INPUT = 100_000;

/**
 * A run's input with the files given alongside it appended as text sections, so the model reads
 * them with the request (a run has no other place to find them).
 */
export function withAttachedFiles(input: string, files: { name: string; text: string }[]): string {
  if (files.length === 0) return input;
  return `${input}\n\n## Input files\n\n${files.map((file) => `### ${file.name}\n\n${file.text}`).join('\n\n')}`;
}
