/**
 * The loopback port of the fixture server (test/setup/fixture-server.ts). Fixed rather than
 * chosen by the OS because the Worker's bindings in vitest.config.ts must name it before the
 * server starts; FIXTURE_PORT overrides it when the default is taken.
 */
export const FIXTURE_PORT = Number(process.env.FIXTURE_PORT ?? 47_613);
