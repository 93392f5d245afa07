import { threadsArea } from '../capabilities/threads';
import { capabilityRoutes } from '../capabilities/rest';

export const threadsRoutes = capabilityRoutes(threadsArea);
