//! The conformance suite on the lowest `pg` the kit declares (`pg ^8.0.3`, installed as `pg-min`;
//! 8.0.0 to 8.0.2 never finish connecting on Node 14 and later); postgres.test.mjs runs it on the
//! newest. CSK_PG_URL=postgres://…
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import pgMin from 'pg-min';
import { conformance } from './conformance.mjs';
import { planConformance } from './conformance-plan.mjs';
import { postgresEngineOn } from './engines.mjs';

const version = JSON.parse(readFileSync(new URL('../node_modules/pg-min/package.json', import.meta.url), 'utf8')).version;

if (process.env.CSK_PG_URL) {
  conformance(`postgres on pg ${version}`, () => postgresEngineOn(pgMin));
  planConformance(`postgres on pg ${version}`, () => postgresEngineOn(pgMin));
} else test(`postgres on pg ${version}: skipped (set CSK_PG_URL)`, { skip: true }, () => {});
