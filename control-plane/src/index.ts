export { loadConfig, ConfigError, configSchema } from './config.js';
export type { ControlPlaneConfig } from './config.js';
export { buildApp } from './app.js';
export type { AppDeps } from './app.js';
export { startControlPlane } from './control-plane.js';
export type { ControlPlane } from './control-plane.js';
export { createLogger } from './logger.js';
export { bootstrapBanner } from './modules/tenants/bootstrap-banner.js';
