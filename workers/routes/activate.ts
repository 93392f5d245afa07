import { deviceActivationArea } from '../capabilities/device-activation';
import { capabilityRoutes } from '../capabilities/rest';

export const activateRoutes = capabilityRoutes(deviceActivationArea);
