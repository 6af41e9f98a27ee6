export { loadGatewayConfig, gatewayConfigSchema, GATEWAY_BOUNDS } from './config.js';
export type { GatewayConfig } from './config.js';
export { startMediaGateway } from './gateway.js';
export { admissionLimits } from './admission.js';
export type { AdmissionLimits } from './admission.js';
export type { MediaGateway } from './gateway.js';
export type { HeapGrowth } from './heap-growth.js';
