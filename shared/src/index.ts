export * from './ids.js';
export * from './errors.js';
export * from './scopes.js';
export * from './catalogue.js';
export * from './bus/subjects.js';
export * from './bus/bus.js';
export { InProcessBus } from './bus/in-process-bus.js';
export { NatsBus } from './bus/nats-bus.js';
export { createBus } from './bus/create-bus.js';
