//! tldraw's asset store. A dropped file goes into the scheduler's ledger as the blob of an
//! `asset.upload` intent (sent as multipart once the server can be reached), and tldraw's
//! asset record names it by a URL, never by its bytes: `{endpoint}/assets/by-operation/{id}`,
//! where `id` is the upload's operation id, chosen here before anything is sent. The reference
//! server serves that URL once the upload has landed (404 before). The record stays small
//! (its `record.put` is a few hundred bytes, whatever the photo weighs), and other clients
//! resolve it from the server.
//!
//! This page shows its own copy meanwhile, offline and after a reload too: the file is kept in
//! Cache Storage under that URL, and `resolve` turns it into an object URL for the session. The
//! copy stays as a local cache once the upload has landed (a real app may evict it then).
import type { TLAssetStore } from "tldraw";

const CACHE = "tldraw-example-assets";

export interface Uploader {
  /** Makes the upload durable in the ledger with the file as its blob (resolves once it is). */
  upload(id: string, file: File): Promise<void>;
}

export function assetStore(endpoint: string, uploader: Uploader | null): TLAssetStore {
  const base = endpoint.replace(/\/+$/, "");
  /** Object URLs of this session's local copies, by the asset's URL. */
  const local = new Map<string, string>();
  const cache = () => caches.open(CACHE);
  return {
    async upload(_asset, file) {
      const id = crypto.randomUUID();
      const src = `${base}/assets/by-operation/${encodeURIComponent(id)}`;
      // The local copy first: once the upload is durable, a reload must still show the file.
      await (await cache()).put(src, new Response(file, { headers: { "content-type": file.type } }));
      local.set(src, URL.createObjectURL(file));
      try {
        await uploader?.upload(id, file);
      } catch (error) {
        // Not stored (full disk, a closed scheduler): tldraw drops the asset and says so.
        await (await cache()).delete(src);
        forget(local, src);
        throw error;
      }
      return { src };
    },
    async resolve(asset) {
      const src = "src" in asset.props ? asset.props.src : null;
      if (!src) return null;
      const known = local.get(src);
      if (known) return known;
      const copy = await (await cache()).match(src);
      if (!copy) return src; // another client's asset, or a copy evicted: the server's
      const url = URL.createObjectURL(await copy.blob());
      local.set(src, url);
      return url;
    },
  };
}

function forget(local: Map<string, string>, src: string) {
  const url = local.get(src);
  if (url) URL.revokeObjectURL(url);
  local.delete(src);
}
