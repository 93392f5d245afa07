import { invitationsArea } from '../capabilities/account';
import { capabilityRoutes } from '../capabilities/rest';

export const invitationsRoutes = capabilityRoutes(invitationsArea);
