//! Serves a kit over real HTTP through toNodeHandler(kit.handle) on 127.0.0.1, behind the same
//! `handle(Request)` the conformance suite calls: it runs unchanged on the node:http path.
import { createServer } from 'node:http';
import { toNodeHandler } from '../src/index.js';

/**
 * The kit, with `handle` going over HTTP and `close` stopping that server too.
 * @param {import('../src/index.js').Kit} kit
 * @returns {Promise<import('../src/index.js').Kit>}
 */
export async function overHttp(kit) {
  const server = createServer(toNodeHandler(kit.handle));
  await new Promise((ready) => server.listen(0, '127.0.0.1', () => ready(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    ...kit,
    handle: async (request) => {
      const { pathname, search } = new URL(request.url);
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
      return fetch(`http://127.0.0.1:${port}${pathname}${search}`, { method: request.method, headers: request.headers, body });
    },
    close: async () => {
      await new Promise((closed) => {
        server.close(() => closed(undefined));
        server.closeAllConnections();
      });
      await kit.close();
    },
  };
}
