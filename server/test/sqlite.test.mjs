//! The conformance suite on the SQLite engine.
import { conformance } from './conformance.mjs';
import { sqliteEngine } from './engines.mjs';

conformance('sqlite', sqliteEngine);
