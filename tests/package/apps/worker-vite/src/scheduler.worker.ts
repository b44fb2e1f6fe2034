// The app's own scheduler worker: the hooks that cannot cross from the page (here `compile`,
// synchronous) are given to serve() here. Marks each shape so the test sees the hook ran.
import { serve } from "canvas-scheduler/worker/serve";
import type { Json } from "canvas-scheduler/worker";

serve({
  compile: (intent) => {
    const payload = intent.payload as { shapeId: string; shape: { [key: string]: Json } };
    return {
      payload: { shapeId: payload.shapeId, shape: { ...payload.shape, compiledBy: "worker" } },
      canvasIds: intent.canvasIds ?? [],
    };
  },
});
