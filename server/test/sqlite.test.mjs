//! The conformance suite on the SQLite engine: through `kit.handle`, and over HTTP through
//! toNodeHandler (the node:http path, which builds no web Request).
import { conformance } from './conformance.mjs';
import { planConformance } from './conformance-plan.mjs';
import { sqliteEngine } from './engines.mjs';

conformance('sqlite', sqliteEngine);
conformance('sqlite over node:http', sqliteEngine, { http: true });
planConformance('sqlite', sqliteEngine);
planConformance('sqlite over node:http', sqliteEngine, { http: true });
