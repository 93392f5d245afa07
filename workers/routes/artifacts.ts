import { artifactsArea } from '../capabilities/artifacts';
import { capabilityRoutes } from '../capabilities/rest';

/** Files runs produced (docs/executions.md). */
export const artifactsRoutes = capabilityRoutes(artifactsArea);
