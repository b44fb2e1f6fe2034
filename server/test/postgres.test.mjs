//! The conformance suite on the Postgres engine (through `kit.handle`, and over HTTP through
//! toNodeHandler): CSK_PG_URL=postgres://… names a server whose
//! user may create databases (scripts/test starts a throw-away cluster and sets it).
import { test } from 'node:test';
import { conformance } from './conformance.mjs';
import { planConformance } from './conformance-plan.mjs';
import { postgresEngine } from './engines.mjs';

if (process.env.CSK_PG_URL) {
  conformance('postgres', postgresEngine);
  conformance('postgres over node:http', postgresEngine, { http: true });
  planConformance('postgres', postgresEngine);
  planConformance('postgres over node:http', postgresEngine, { http: true });
}
else test('postgres: skipped (set CSK_PG_URL)', { skip: true }, () => {});
