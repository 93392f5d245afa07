import { AREAS } from '../../workers/capabilities';
import { capabilityRouteKey, type Area, type Capability } from '../../workers/capabilities/capability';
import { connectorsArea } from '../../workers/capabilities/connectors';
import { offersTool, toolArguments } from '../../workers/mcp/tool';

/**
 * The MCP tool tables of docs/mcp.md and docs/connectors.md, rendered from the capabilities
 * between two marker comments, so the prose around them stays hand-written (`npm run docs:tools`
 * writes them; a test fails when a page and the code differ).
 */

const BEGIN = '<!-- tools:begin: generated from the capabilities (workers/capabilities/) by `npm run docs:tools`; do not edit by hand. -->';
const END = '<!-- tools:end -->';

/** Each page with a tool table, and the areas whose tools it lists: the connector tools have their own page. */
export const TOOL_TABLES: readonly { page: string; areas: readonly Area[] }[] = [
  { page: 'docs/mcp.md', areas: AREAS.filter((area) => area !== connectorsArea) },
  { page: 'docs/connectors.md', areas: [connectorsArea] },
];

/** The tool's arguments, `?` marking those it may leave out. */
const argumentsOf = (capability: Capability) => {
  const names = Object.entries(toolArguments(capability).shape).map(([name, schema]) => `\`${name}${schema.isOptional() ? '?' : ''}\``);
  return names.length ? names.join(', ') : 'none';
};

const row = (area: Area, capability: Capability) =>
  `| \`${capability.name}\` | ${argumentsOf(capability)} | ${capability.http ? `\`${capabilityRouteKey(area, capability.http)}\`` : '—'} |`;

export const toolTable = (areas: readonly Area[]) =>
  [
    '| Tool | Arguments | Mirrors |',
    '|---|---|---|',
    ...areas.flatMap((area) => area.capabilities.filter(offersTool).map((capability) => row(area, capability))),
  ].join('\n');

/** `page` with the text between its markers replaced by `table`. */
export function withToolTable(page: string, table: string): string {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`The page lacks the tool table's markers: ${BEGIN} … ${END}`);
  return `${page.slice(0, start + BEGIN.length)}\n\n${table}\n\n${page.slice(end)}`;
}
