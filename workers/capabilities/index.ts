import { artifactsArea } from './artifacts';
import { billingArea, byokArea } from './billing';
import type { Area, Capability } from './capability';
import { connectorsArea } from './connectors';
import { executionsArea } from './executions';
import { marketplaceArea } from './marketplace';
import { memoryArea } from './memory';
import { installArea, skillsArea, skillSecretsArea } from './skills';

/** Every area declared as capabilities; its REST routes, access entries, MCP tools and run tools are generated from these. */
export const AREAS: readonly Area[] = [
  memoryArea,
  executionsArea,
  artifactsArea,
  connectorsArea,
  skillsArea,
  skillSecretsArea,
  installArea,
  marketplaceArea,
  billingArea,
  byokArea,
];

export const CAPABILITIES: readonly Capability[] = AREAS.flatMap((area) => area.capabilities);
