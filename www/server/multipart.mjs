// multipart/form-data for asset.upload: a `request` part (the frozen request JSON) and a `blob`
// part (the file). Parsed with busboy, with hard limits so a runaway upload cannot exhaust memory.

import { createHash } from 'node:crypto';

import busboy from 'busboy';

import { ProtocolError } from './protocol.mjs';

/**
 * @typedef {object} UploadParts
 * @property {string} requestText The `request` part as text.
 * @property {import('./engine.mjs').Blob | null} blob The `blob` part, if any.
 */

/**
 * Reads a multipart upload.
 *
 * The `request` part may arrive as a plain field or as a file part (browsers send a `Blob`
 * appended to `FormData` as a file); either way it is JSON text.
 *
 * @param {import('node:http').IncomingMessage} req
 * @param {object} limits
 * @param {number} limits.maxRequestBytes Bound on the `request` part.
 * @param {number} limits.maxBlobBytes Bound on the `blob` part.
 * @returns {Promise<UploadParts>}
 * @throws {ProtocolError} 400 `invalid_multipart`, 413 `payload_too_large`.
 */
export function readUpload(req, { maxRequestBytes, maxBlobBytes }) {
  return new Promise((resolve, reject) => {
    let parser;
    try {
      parser = busboy({
        headers: req.headers,
        limits: {
          fields: 1,
          files: 2,
          parts: 3, // the third part raises partsLimit: more than request + blob
          fieldSize: maxRequestBytes,
          fileSize: Math.max(maxRequestBytes, maxBlobBytes),
        },
      });
    } catch (error) {
      reject(new ProtocolError(400, 'invalid_multipart', error.message));
      return;
    }
    let requestText = null;
    let blob = null;
    let failure = null;
    let pending = 0;
    let finished = false;

    const fail = (error) => {
      failure ??= error;
    };
    const settle = () => {
      if (!finished || pending > 0) return;
      if (failure) return reject(failure);
      if (requestText === null) {
        return reject(new ProtocolError(400, 'invalid_multipart', 'the request part is missing'));
      }
      resolve({ requestText, blob });
    };

    parser.on('field', (name, value, info) => {
      if (name !== 'request') return fail(new ProtocolError(400, 'invalid_multipart', `unexpected field ${name}`));
      if (info.valueTruncated) return fail(new ProtocolError(413, 'payload_too_large', 'the request part is too large'));
      if (requestText !== null) return fail(new ProtocolError(400, 'invalid_multipart', 'two request parts'));
      requestText = value;
    });

    parser.on('file', (name, stream, info) => {
      const isRequest = name === 'request';
      if (!isRequest && name !== 'blob') {
        fail(new ProtocolError(400, 'invalid_multipart', `unexpected part ${name}`));
        stream.resume();
        return;
      }
      const limit = isRequest ? maxRequestBytes : maxBlobBytes;
      const chunks = [];
      const hash = createHash('sha256');
      let size = 0;
      pending += 1;
      stream.on('data', (chunk) => {
        size += chunk.length;
        if (size > limit) return; // keep draining; reported below
        chunks.push(chunk);
        hash.update(chunk);
      });
      stream.on('limit', () => fail(new ProtocolError(413, 'payload_too_large', `the ${name} part is too large`)));
      stream.on('close', () => {
        pending -= 1;
        if (size > limit) fail(new ProtocolError(413, 'payload_too_large', `the ${name} part is too large`));
        else if (isRequest) {
          if (requestText !== null) fail(new ProtocolError(400, 'invalid_multipart', 'two request parts'));
          else requestText = Buffer.concat(chunks).toString('utf8');
        } else if (blob !== null) {
          fail(new ProtocolError(400, 'invalid_multipart', 'two blob parts'));
        } else {
          blob = {
            data: Buffer.concat(chunks),
            contentType: info.mimeType || 'application/octet-stream',
            filename: info.filename ?? null,
            size,
            sha256: hash.digest('hex'),
          };
        }
        settle();
      });
    });

    const overLimit = (what) => () => fail(new ProtocolError(400, 'invalid_multipart', `too many ${what}`));
    parser.on('partsLimit', overLimit('parts'));
    parser.on('filesLimit', overLimit('files'));
    parser.on('fieldsLimit', overLimit('fields'));
    // Ends the read at once: the parser will not close by itself after an error or an abort,
    // and a read that never ends would leave the key "in progress" forever.
    const abandon = (error) => {
      fail(error);
      finished = true;
      pending = 0;
      req.unpipe(parser);
      settle();
    };
    parser.on('error', (error) => abandon(new ProtocolError(400, 'invalid_multipart', error.message)));
    parser.on('close', () => {
      finished = true;
      settle();
    });
    req.on('close', () => {
      if (!req.complete) abandon(new ProtocolError(400, 'invalid_multipart', 'the upload was aborted'));
    });
    req.pipe(parser);
  });
}
