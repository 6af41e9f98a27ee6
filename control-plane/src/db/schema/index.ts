export * from './tenants.js';
export * from './users.js';
export * from './api-keys.js';
export * from './agents.js';
export * from './agent-versions.js';
export * from './idempotency-keys.js';
export * from './rate-limit-windows.js';
