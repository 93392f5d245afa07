import { Hono, type Context } from 'hono';
import { describeRoute, generateSpecs, resolver, type DescribeRouteOptions } from 'hono-openapi';
import { z } from 'zod';
import { CURRENT_API_VERSION } from '../middleware/request-context';
import type { AppEnv } from '../env';
import { optionalJsonBody } from '../middleware/validate';
import { WORKFLOW_SCHEMA_PATH, workflowSchemas } from '../workflows/definition-schema';

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

export type RequestBody = NonNullable<DescribeRouteOptions['requestBody']>;

/** OpenAPI description of one route: its success response plus the shared error responses, and a request body the validators do not describe. */
export const documented = (tag: string, summary: string, status: 200 | 201 | 202, schema: z.ZodType, description = 'OK', requestBody?: RequestBody) =>
  describeRoute({
    tags: [tag],
    summary,
    parameters: [bookmark.parameter],
    ...(requestBody ? { requestBody: { required: true, ...requestBody } } : {}),
    responses: { [status]: { ...json(schema, description), headers: { 'x-d1-bookmark': bookmark.header } }, ...errors },
  });

/** As `documented`, for a route whose successful answers differ by status, each with its own body. */
export const documentedAnswers = (tag: string, summary: string, answers: Partial<Record<200 | 201 | 202, { schema: z.ZodType; description: string }>>) =>
  describeRoute({
    tags: [tag],
    summary,
    parameters: [bookmark.parameter],
    responses: {
      ...Object.fromEntries(
        Object.entries(answers).map(([status, { schema, description }]) => [
          status,
          { ...json(schema, description), headers: { 'x-d1-bookmark': bookmark.header } },
        ]),
      ),
      ...errors,
    },
  });

const componentRef = (name: string) => `#/components/schemas/${name}`;

/** The install body: a definition, `{definition}`, or `{content}` holding it as JSON text. */
export const workflowDefinitionBody: RequestBody = {
  description: `A workflow definition (its JSON Schema alone: ${WORKFLOW_SCHEMA_PATH}), or {definition}, or {content: the definition as JSON text}.`,
  content: {
    'application/json': {
      schema: {
        oneOf: [
          { $ref: componentRef('WorkflowDefinition') },
          { type: 'object', properties: { definition: { $ref: componentRef('WorkflowDefinition') } }, required: ['definition'] },
          { type: 'object', properties: { content: { type: 'string', contentMediaType: 'application/json' } }, required: ['content'] },
        ],
      },
    },
  },
};

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
    responses: {
      [status]: {
        description: 'OK',
        ...(status === 101 ? {} : { content: { [mediaType]: { schema: { type: mediaType === 'application/json' ? 'object' : 'string' } } } }),
      },
      '4XX': { description: `Refused; the body is as ${standard} defines it, or the service's error envelope` },
    },
  });

/**
 * The OpenAPI document generated from the routes' descriptions, with `origin` as its server and the
 * workflow definition's schemas as components. Also built outside a request: the console's API
 * types are generated from it (scripts/console-api-types.ts).
 */
export async function buildOpenApiDocument(app: Hono<AppEnv>, origin: string) {
  const document = await generateSpecs(app, {
    documentation: {
      openapi: '3.1.0',
      info: {
        title: 'Workspace AI Skills Service',
        version: CURRENT_API_VERSION,
        description: 'Skills, workflows, agents and their outputs in one multi-tenant workspace.',
      },
      servers: [{ url: origin, description: 'This service' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          session: { type: 'apiKey', in: 'header', name: 'x-auth-token' },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ apiKey: [] }, { session: [] }, { bearer: [] }],
    },
  });
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...workflowSchemas(componentRef) } };
  // The generator marks every validated body required; routes behind optionalJsonBody also take
  // none, unless `documented` described their body itself (those bodies carry a description).
  for (const route of app.routes) {
    if (route.handler !== optionalJsonBody) continue;
    const body = document.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase() as 'post']?.requestBody;
    if (body && !('$ref' in body) && !body.description) body.required = false;
  }
  return document;
}

/** GET /api/v1/openapi.json: the document with the request's own origin as its server (clients generated from it call where it came from). */
const openApiDocument = (app: Hono<AppEnv>) => async (c: Context<AppEnv>) => c.json(await buildOpenApiDocument(app, new URL(c.req.url).origin));

/** The document's route, mounted at `/api/v1`. */
export const openApiRoutes = (app: Hono<AppEnv>) => new Hono<AppEnv>().get('/openapi.json', openApiDocument(app));
