import { describeRoute, resolver } from 'hono-openapi';
import { z } from 'zod';

const ErrorEnvelope = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});

const json = (schema: z.ZodType, description: string) => ({
  description,
  content: { 'application/json': { schema: resolver(schema) } },
});

const errors = {
  400: json(ErrorEnvelope, 'INVALID_INPUT, with details.field and details.rule'),
  401: json(ErrorEnvelope, 'UNAUTHORIZED: no usable credential'),
  403: json(ErrorEnvelope, 'FORBIDDEN: key unactivated, revoked or missing the scope'),
  429: json(ErrorEnvelope, 'RATE_LIMITED'),
};

/** The cursor envelope of spec 8 around `item`. */
export { cursorEnvelope } from '../lib/pagination';

/** D1 read replication: the session bookmark each answer carries and a client may send back (workers/middleware/request-context.ts). */
const bookmark = {
  parameter: {
    name: 'x-d1-bookmark',
    in: 'header' as const,
    required: false,
    description: 'The x-d1-bookmark of an earlier answer: this request reads data at least as fresh as that answer saw (read-your-writes across replicas).',
    schema: { type: 'string' as const },
  },
  header: { description: 'The database session bookmark after this request; send it back to read at least this fresh.', schema: { type: 'string' as const } },
};

/** OpenAPI description of one route: its success response plus the shared error responses. */
export const documented = (tag: string, summary: string, status: 200 | 201, schema: z.ZodType, description = 'OK') =>
  describeRoute({
    tags: [tag],
    summary,
    parameters: [bookmark.parameter],
    responses: { [status]: { ...json(schema, description), headers: { 'x-d1-bookmark': bookmark.header } }, ...errors },
  });

/** OpenAPI description of a route a browser lands on: an HTML page, or the envelope's 404 for other values of `param`. */
export const documentedPage = (tag: string, summary: string, param: { name: string; values: readonly string[] }) =>
  describeRoute({
    tags: [tag],
    summary,
    parameters: [{ name: param.name, in: 'path', required: true, schema: { type: 'string', enum: [...param.values] } }],
    responses: {
      200: { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
      404: json(ErrorEnvelope, 'NOT_FOUND'),
      429: errors[429],
    },
  });

/**
 * OpenAPI description of a route whose wire format another standard defines (OAuth RFCs, MCP,
 * Server-Sent Events, WebSocket): what it is, its media type, and where the format is specified.
 */
export const documentedProtocol = (tag: string, summary: string, standard: string, status: 101 | 200 | 201, mediaType: string) =>
  describeRoute({
    tags: [tag],
    summary,
    description: `Wire format: ${standard}.`,
    responses: { [status]: { description: 'OK', ...(status === 101 ? {} : { content: { [mediaType]: { schema: { type: mediaType === 'application/json' ? 'object' : 'string' } } } }) } },
  });
