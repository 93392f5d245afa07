import { describe, expect, it } from 'vitest';
import { MEMORY_SEPARATOR } from '../../workers/services/memory';
import { call, expectError, signUp, type TestUser } from '../helpers/api';

/**
 * Limits that count what they should: working memory's cap in UTF-8 bytes for writes and
 * appends alike.
 */

/** The documented cap (docs/behaviour.md). */
const MAX_MEMORY_BYTES = 524_288;

describe('working memory’s cap', () => {
  const put = (user: TestUser, content: string, mode?: 'append') =>
    call('/api/v1/memory', { method: 'PUT', token: user.token, body: mode ? { content, mode } : { content } });
  const bytes = (text: string) => new TextEncoder().encode(text).byteLength;
  const stored = async (user: TestUser) => (await call('/api/v1/memory', { token: user.token })).body.content as string;

  it('is the same number of UTF-8 bytes for a write and for appends, multi-byte characters included', async () => {
    const user = await signUp();
    // 4 bytes each (2 UTF-16 units, 1 character to SQLite): the whole cap in one entry.
    const emoji = '😀'.repeat(MAX_MEMORY_BYTES / 4);
    expect((await put(user, emoji, 'append')).status).toBe(200);
    const appended = expectError(await put(user, 'x', 'append'), 400, 'INVALID_INPUT');
    const written = expectError(await put(user, `${emoji}${MEMORY_SEPARATOR}x`), 400, 'INVALID_INPUT');
    expect(appended).toEqual(written);
    expect(appended.details).toMatchObject({ field: 'content', rule: 'too_big', limit: MAX_MEMORY_BYTES });
    expect(await stored(user)).toBe(emoji);

    // Two-byte characters: half the cap's count of them is already over it, for a write as for an append.
    const accents = 'é'.repeat(MAX_MEMORY_BYTES / 2 + 1);
    expect(expectError(await put(user, accents), 400, 'INVALID_INPUT')).toEqual(written);
    expect(expectError(await put(user, accents, 'append'), 400, 'INVALID_INPUT')).toEqual(written);
  });

  it('lets appends fill the document to exactly the cap, separators counted, and no further', async () => {
    const user = await signUp();
    const start = 'x'.repeat(MAX_MEMORY_BYTES - bytes(MEMORY_SEPARATOR) - 4 - bytes(MEMORY_SEPARATOR) - 1);
    expect((await put(user, start)).status).toBe(200);
    expect((await put(user, '😀', 'append')).status).toBe(200);
    expect((await put(user, 'é', 'append')).status).toBe(400);
    expect((await put(user, 'y', 'append')).status).toBe(200);
    expect(bytes(await stored(user))).toBe(MAX_MEMORY_BYTES);
    expect((await put(user, 'z', 'append')).status).toBe(400);
  });
});
