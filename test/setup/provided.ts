/**
 * What the fixture server (fixture-server.ts, run by Node) provides to the tests in workerd:
 * shared by both sides, so it holds nothing of Node's.
 */
export const MODEL_KEYS = { anthropic: 'test-anthropic-key', openai: 'test-openai-key', byok: 'sk-byok-test-0123456789abcdef' };

declare module 'vitest' {
  export interface ProvidedContext {
    fixtureOrigin: string;
    fixtureCommit: string;
    modelKeys: typeof MODEL_KEYS;
  }
}
