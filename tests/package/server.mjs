// The packed canvas-scheduler-server tarball in a fresh Node app: `npm pack server/`,
// install it offline into a new directory, type-check an app against its declarations with
// tsc --strict, then run that app: the kit on SQLite behind node:http on 127.0.0.1, one submit,
// one repeat, one query; and a kit with a `plan` deciding one key twice (written once).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, symlinkSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(new URL('../..', import.meta.url).pathname);
const work = mkdtempSync(join(tmpdir(), 'csk-pack-'));
try {
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: join(root, 'server'), encoding: 'utf8' }).trim().split('\n').pop();
  const app = join(work, 'app');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-save', join(work, tarball)], { cwd: app, stdio: 'inherit' });
  // The app brings its own driver (a peer dependency): the one server/ installed.
  symlinkSync(join(root, 'server/node_modules/better-sqlite3'), join(app, 'node_modules/better-sqlite3'));
  for (const dep of ['bindings', 'file-uri-to-path']) {
    symlinkSync(join(root, 'server/node_modules', dep), join(app, 'node_modules', dep));
  }
  writeFileSync(join(app, 'shims.d.ts'), "declare module 'better-sqlite3';\n");
  writeFileSync(
    join(app, 'main.ts'),
    `import { createKit, sqliteStore, toNodeHandler, type ApplyResult } from 'canvas-scheduler-server';
import Database from 'better-sqlite3';
import { createServer } from 'node:http';
const db = new Database(process.argv[2]);
db.exec('CREATE TABLE IF NOT EXISTS notes (key TEXT)');
const kit = createKit({
  store: sqliteStore({ db }),
  principal: (request: Request) => request.headers.get('x-user'),
  apply: (request, tx): ApplyResult => {
    tx.prepare('INSERT INTO notes VALUES (?)').run(request.key);
    return { outcome: 'applied', canonical: { key: request.key } };
  },
});
// The same write as a plan: the answer and its statement given up front.
const planDb = new Database(process.argv[2] + '-plan');
planDb.exec('CREATE TABLE IF NOT EXISTS notes (key TEXT)');
const planned = createKit({
  store: sqliteStore({ db: planDb }),
  plan: (request) => ({ outcome: 'applied', statements: [{ text: 'INSERT INTO notes VALUES (?)', values: [request.key] }] }),
});
const server = createServer(toNodeHandler(kit.handle));
server.listen(0, '127.0.0.1', async () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const endpoint = 'http://127.0.0.1:' + address.port + '/v1';
  const body = JSON.stringify({ id: 'k', operationIds: ['o'], kind: 'note', protocolVersion: 1, payload: null, canvasIds: [] });
  const headers = { 'content-type': 'application/json', 'x-user': 'me' };
  const a = await fetch(endpoint + '/requests', { method: 'POST', headers, body });
  const b = await fetch(endpoint + '/requests', { method: 'POST', headers, body });
  const q = await fetch(endpoint + '/requests/k', { headers });
  const rows = db.prepare('SELECT count(*) AS n FROM notes').get() as { n: number };
  const submitted = { principal: 'me', key: 'p', digest: 'd', body: {} };
  const first = await planned.decide(submitted);
  const again = await planned.decide(submitted);
  const planRows = planDb.prepare('SELECT count(*) AS n FROM notes').get() as { n: number };
  const fresh = [first, again].map((d) => (d.state === 'done' ? d.fresh : d.state));
  console.log(JSON.stringify([a.status, await a.text(), b.status, await b.text(), q.status, await q.text(), rows.n, fresh, planRows.n]));
  server.close();
  await kit.close();
  await planned.close();
});
`,
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: ['node'], typeRoots: [join(root, 'node_modules/@types')], noImplicitAny: false, skipLibCheck: false, allowImportingTsExtensions: true }, files: ['main.ts', 'shims.d.ts'] }),
  );
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', app], { stdio: 'inherit' });
  // Run it: the same code as plain JS (strip the two type annotations).
  const { readFileSync } = await import('node:fs');
  const js = readFileSync(join(app, 'main.ts'), 'utf8').replace(', type ApplyResult', '').replace('(request: Request)', '(request)').replace('): ApplyResult =>', ') =>').replaceAll(' as { n: number }', '');
  writeFileSync(join(app, 'main.mjs'), js);
  const out = execFileSync(process.execPath, [join(app, 'main.mjs'), join(work, 'app.sqlite')], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  const answer = '{"outcome":"applied","canonical":{"key":"k"}}';
  const expected = JSON.stringify([200, answer, 200, answer, 200, answer, 1, [true, false], 1]);
  if (out.trim() !== expected) throw new Error(`the packed kit answered ${out.trim()}, expected ${expected}`);
  console.log('1 passed, 0 failed');
} finally {
  rmSync(work, { recursive: true, force: true });
}
