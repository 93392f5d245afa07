// npm run docs:tools: writes the MCP tool tables of docs/mcp.md and docs/connectors.md from the capabilities.
import { readFileSync, writeFileSync } from 'node:fs';
import { TOOL_TABLES, toolTable, withToolTable } from './lib/tool-tables';

for (const { page, areas } of TOOL_TABLES) {
  writeFileSync(page, withToolTable(readFileSync(page, 'utf8'), toolTable(areas)));
  console.log(`docs:tools: wrote the tool table of ${page}`);
}
