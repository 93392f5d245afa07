import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCapability, READ_ONLY, type Area } from '../../workers/capabilities/capability';
import { mountAreas } from '../../workers/capabilities/rest';
import type { AppEnv } from '../../workers/env';

/** A public GET at `path` that answers which area served it. */
const answering = (area: string, path: string, input: z.ZodObject): Area => ({
  mount: '',
  tag: area,
  capabilities: [
    defineCapability({
      name: `answer-${area}`,
      title: area,
      description: `Names ${area}.`,
      access: { auth: 'public' },
      input,
      output: z.object({ servedBy: z.string() }),
      annotations: READ_ONLY,
      http: { method: 'GET', path },
      run: async () => ({ servedBy: area }),
    }),
  ],
});

// The outer area has a parameter route that also matches every path of the nested one.
const outer: Area = { ...answering('outer', '/:slug/:part', z.object({ slug: z.string(), part: z.string() })), mount: '/things' };
const nested: Area = { ...answering('nested', '/', z.object({ slug: z.string() })), mount: '/things/:slug/parts' };

const servedBy = async (areas: Area[], path: string) => {
  const app = new Hono<AppEnv>();
  mountAreas(app, areas);
  const res = await app.request(path);
  return ((await res.json()) as { servedBy: string }).servedBy;
};

describe('mountAreas', () => {
  it('lets an area mounted under another answer its paths, whichever is listed first', async () => {
    expect(await servedBy([outer, nested], '/things/a/parts')).toBe('nested');
    expect(await servedBy([nested, outer], '/things/a/parts')).toBe('nested');
  });

  it('leaves the outer area its other paths', async () => {
    expect(await servedBy([outer, nested], '/things/a/other')).toBe('outer');
  });
});
