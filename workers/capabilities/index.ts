import { activityArea, auditLogsArea } from './activity';
import { accountDeletionsArea, apiKeysArea, invitationsArea, profileArea, workspacesArea } from './account';
import { agentPermissionsArea } from './agent-permissions';
import { agentsArea } from './agents';
import { artifactsArea } from './artifacts';
import { billingArea, byokArea } from './billing';
import { stepToolIdOf, type Area, type Capability } from './capability';
import { declareStepToolIds } from '../workflows/step-tool-ids';
import { connectorsArea } from './connectors';
import { deviceActivationArea } from './device-activation';
import { eventsArea } from './events';
import { executionsArea } from './executions';
import { marketplaceArea } from './marketplace';
import { memoryArea } from './memory';
import { oauthGrantsArea } from './oauth-grants';
import { secretsArea } from './secrets';
import { skillEvalsArea } from './skill-evals';
import { installArea, skillsArea, skillSecretsArea } from './skills';
import { threadsArea } from './threads';
import { tracesArea } from './traces';
import { webhooksArea } from './webhooks';
import { workflowsArea } from './workflows';

/** Every area declared as capabilities; its REST routes, access entries, MCP tools and run tools are generated from these. */
export const AREAS: readonly Area[] = [
  profileArea,
  accountDeletionsArea,
  workspacesArea,
  invitationsArea,
  apiKeysArea,
  oauthGrantsArea,
  agentsArea,
  agentPermissionsArea,
  deviceActivationArea,
  memoryArea,
  auditLogsArea,
  activityArea,
  marketplaceArea,
  skillsArea,
  skillSecretsArea,
  skillEvalsArea,
  installArea,
  secretsArea,
  executionsArea,
  artifactsArea,
  billingArea,
  byokArea,
  workflowsArea,
  connectorsArea,
  tracesArea,
  threadsArea,
  eventsArea,
  webhooksArea,
];

export const CAPABILITIES: readonly Capability[] = AREAS.flatMap((area) => area.capabilities);

declareStepToolIds(CAPABILITIES.flatMap((c) => (c.workflowStep ? [stepToolIdOf(c)] : [])));
