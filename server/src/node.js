//! The `node:http` adapter: turns an IncomingMessage into a web Request, writes the Response.

import { Readable } from 'node:stream';

/**
 * @param {(request: Request) => Promise<Response>} handle
 * @returns {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void}
 */
export function toNodeHandler(handle) {
  return (req, res) => {
    const host = req.headers.host ?? '127.0.0.1';
    // Express and Fastify strip a mount path from req.url; originalUrl keeps it.
    const path = /** @type {any} */ (req).originalUrl ?? req.url ?? '/';
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else if (value != null) headers.set(name, value);
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`http://${host}${path}`, {
      method: req.method,
      headers,
      body: hasBody ? /** @type {any} */ (Readable.toWeb(req)) : undefined,
      // @ts-ignore duplex is required by Node's fetch for a streamed body
      duplex: 'half',
    });
    handle(request).then(
      async (response) => {
        res.statusCode = response.status;
        response.headers.forEach((value, name) => res.setHeader(name, value));
        res.end(Buffer.from(await response.arrayBuffer()));
      },
      () => {
        res.statusCode = 500;
        res.setHeader('content-type', 'application/json');
        res.end('{"error":{"code":"internal","message":"the server failed"}}');
      },
    );
  };
}
