import { activityArea, auditLogsArea } from './activity';
import { apiKeysArea, invitationsArea, profileArea, workspacesArea } from './account';
import { agentPermissionsArea } from './agent-permissions';
import { artifactsArea } from './artifacts';
import type { Area, Capability } from './capability';
import { connectorsArea } from './connectors';
import { deviceActivationArea } from './device-activation';
import { eventsArea } from './events';
import { executionsArea } from './executions';
import { memoryArea } from './memory';
import { secretsArea } from './secrets';
import { threadsArea } from './threads';
import { tracesArea } from './traces';

/** Every area declared as capabilities; its REST routes, access entries, MCP tools and run tools are generated from these. */
export const AREAS: readonly Area[] = [
  profileArea,
  workspacesArea,
  invitationsArea,
  apiKeysArea,
  agentPermissionsArea,
  deviceActivationArea,
  memoryArea,
  auditLogsArea,
  activityArea,
  secretsArea,
  executionsArea,
  artifactsArea,
  connectorsArea,
  tracesArea,
  threadsArea,
  eventsArea,
];

export const CAPABILITIES: readonly Capability[] = AREAS.flatMap((area) => area.capabilities);
