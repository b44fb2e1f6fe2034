//! canvas-scheduler-server: a wire protocol v1 server kit (docs/protocol.md) with exactly-once
//! apply.

export { createKit } from './kit.js';
export { sqliteStore } from './sqlite.js';
export { postgresStore } from './postgres.js';
export { toNodeHandler } from './node.js';
export { DEFAULT_LIMITS, PROTOCOL_VERSION, canonicalJson } from './protocol.js';
