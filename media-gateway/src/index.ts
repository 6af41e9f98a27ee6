export { loadGatewayConfig, gatewayConfigSchema } from './config.js';
export type { GatewayConfig } from './config.js';
export { startMediaGateway } from './gateway.js';
export { DEFAULT_OVERLOAD_LAG_MS } from './admission.js';
export type { MediaGateway } from './gateway.js';
