import { capabilityRoutes } from '../capabilities/rest';
import { memoryArea } from '../capabilities/memory';

export const memoryRoutes = capabilityRoutes(memoryArea);
