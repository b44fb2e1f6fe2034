// The chaos page's scheduler in a dedicated worker (?worker=1): the page kills it with
// terminate() — no `pagehide`, no stop(), the lease left to lapse — and starts another.
// Messages in: {type: "open", params} once, then {type: "call", id, method, args}; out: "ready"
// or "failed", {type: "ack", id} per acknowledged enqueue, {type: "result", id, value | error}.
import { openSession } from "./session.js";

let session = null;

onmessage = async ({ data }) => {
  if (data.type === "open") {
    try {
      session = await openSession({ ...data.params, ack: (id) => postMessage({ type: "ack", id }) });
      postMessage({ type: "ready" });
    } catch (error) {
      postMessage({ type: "failed", message: `${error?.code ?? ""} ${error?.message ?? error}` });
    }
    return;
  }
  if (data.type === "call") {
    try {
      const value = await session[data.method](...data.args);
      postMessage({ type: "result", id: data.id, value });
    } catch (error) {
      postMessage({ type: "result", id: data.id, error: `${error?.code ?? ""} ${error?.message ?? error}` });
    }
  }
};
