import { defineConfig } from "vite";
import wasm from "vite-plugin-wasm";

// vite-plugin-wasm gives `import * as wasm from "./canvas_scheduler_bg.wasm"` (the bundler
// entry's glue) ES module integration of WebAssembly.
export default defineConfig({ plugins: [wasm()] });
