import { capabilityRoutes } from '../capabilities/rest';
import { skillsArea } from '../capabilities/skills';

export const skillsRoutes = capabilityRoutes(skillsArea);
