// The three browser engines of the cross-engine end-to-end tests, behind one small driver:
//   chromium  Debian's chromium through playwright-core (CDP);
//   firefox   Debian's firefox-esr through puppeteer-core (WebDriver BiDi);
//   webkit    WebKitGTK's MiniBrowser through WebKitWebDriver (plain WebDriver HTTP), under
//             xvfb-run (WebKitGTK has no headless mode).
// launch(engine) → Browser { engine, version, can, newContext(), close() };
// Context { newPage(), close() } (pages of one context share IndexedDB, Web Locks and
// BroadcastChannel; contexts share nothing); Page { goto, reload, url, evaluate, waitFor,
// expose, click, check, fill, drag, setFile, text, screenshot, crash, close }.
// `can` names what an engine's driver cannot do (Browser.can.crash: a renderer crash through
// CDP Page.crash; can.quota: an origin quota through CDP); a test that needs it says so in its
// output (`unsupported(engine, what)`), never skips silently. Nothing here downloads a browser.
import { execFileSync, spawn } from "node:child_process";
import { writeFile, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import puppeteer from "puppeteer-core";
import { CHROMIUM_ARGS, chromiumPath, ROOT } from "./harness.mjs";

export const ENGINES = ["chromium", "firefox", "webkit"];

/** The engines to run: ENGINES=chromium,webkit, or wasm-pack.toml's [test] engines. */
export function enginesToRun() {
  const wanted = (process.env.ENGINES ?? manifest("engines")).split(/[\s,]+/).filter(Boolean);
  for (const engine of wanted) if (!ENGINES.includes(engine)) throw new Error(`unknown engine ${engine} (${ENGINES.join(", ")})`);
  return wanted;
}

function manifest(query) {
  return execFileSync("python3", [join(ROOT, "scripts", "manifest"), query], { encoding: "utf8" }).trim();
}

/** The line a test prints for what `engine` cannot do. */
export const unsupported = (engine, what) => `not available in ${engine}: ${what}`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Launches `engine`'s browser. */
export async function launch(engine) {
  if (engine === "chromium") return launchChromium();
  if (engine === "firefox") return launchFirefox();
  if (engine === "webkit") return launchWebKit();
  throw new Error(`unknown engine ${engine}`);
}

// ---- shared: what every driver does through evaluate ----------------------------------------

/** The page-side half of click/check/fill where a driver has no better way. */
const dom = {
  center: (selector) => {
    const element = document.querySelector(selector);
    if (!element) return null;
    element.scrollIntoView({ block: "center", inline: "center" });
    const box = element.getBoundingClientRect();
    return { x: box.x, y: box.y, width: box.width, height: box.height };
  },
  fill: ([selector, value]) => {
    const element = document.querySelector(selector);
    element.value = value;
    element.dispatchEvent(new Event("input", { bubbles: true }));
    element.dispatchEvent(new Event("change", { bubbles: true }));
  },
  checked: (selector) => document.querySelector(selector)?.checked ?? null,
  text: (selector) => document.querySelector(selector)?.textContent ?? null,
};

/** Methods built on the driver's own evaluate / clickAt / dragAt. */
class BasePage {
  async waitFor(what, fn, arg, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.evaluate(fn, arg).catch(() => null);
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await sleep(100);
    }
  }

  waitForSelector(selector, timeoutMs) {
    return this.waitFor(selector, (s) => document.querySelector(s) !== null, selector, timeoutMs);
  }

  async box(selector) {
    const box = await this.evaluate(dom.center, selector);
    if (!box) throw new Error(`no element ${selector}`);
    return box;
  }

  /** A real click (the driver's pointer input) at the middle of the element. */
  async click(selector) {
    const box = await this.box(selector);
    await this.clickAt(box.x + box.width / 2, box.y + box.height / 2);
  }

  async check(selector, on = true) {
    if ((await this.evaluate(dom.checked, selector)) !== on) await this.click(selector);
  }

  fill(selector, value) {
    return this.evaluate(dom.fill, [selector, value]);
  }

  text(selector) {
    return this.evaluate(dom.text, selector);
  }
}

// ---- chromium: playwright-core ------------------------------------------------------------

async function launchChromium() {
  const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
  return {
    engine: "chromium",
    version: browser.version(),
    can: { crash: true, quota: true },
    newContext: async (options = {}) => wrapPlaywrightContext(await browser.newContext(options)),
    close: () => browser.close(),
  };
}

/** A Playwright BrowserContext as a Context (`raw` for what only Playwright does, e.g. CDP). */
export function wrapPlaywrightContext(context) {
  return {
    raw: context,
    newPage: async () => new PlaywrightPage(await context.newPage()),
    close: () => context.close(),
  };
}

class PlaywrightPage extends BasePage {
  constructor(page) {
    super();
    this.raw = page;
  }
  onProblem(print) {
    this.raw.on("pageerror", (error) => print(`page error: ${error.message}`));
    this.raw.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) print(`page console: ${message.text().slice(0, 300)}`);
    });
  }
  goto(url) {
    return this.raw.goto(url, { timeout: 15_000 });
  }
  reload() {
    return this.raw.reload({ timeout: 15_000 });
  }
  async url() {
    return this.raw.url();
  }
  evaluate(fn, arg) {
    return this.raw.evaluate(fn, arg);
  }
  expose(name, handler) {
    return this.raw.exposeFunction(name, handler);
  }
  click(selector) {
    return this.raw.click(selector);
  }
  check(selector, on = true) {
    return this.raw.setChecked(selector, on);
  }
  fill(selector, value) {
    return this.raw.fill(selector, value);
  }
  waitForSelector(selector, timeoutMs = 30_000) {
    return this.raw.waitForSelector(selector, { timeout: timeoutMs });
  }
  async drag(selector, [x0, y0], [x1, y1]) {
    const box = await this.raw.locator(selector).boundingBox();
    await this.raw.mouse.move(box.x + x0 * box.width, box.y + y0 * box.height);
    await this.raw.mouse.down();
    await this.raw.mouse.move(box.x + x1 * box.width, box.y + y1 * box.height, { steps: 5 });
    await this.raw.mouse.up();
  }
  setFile(selector, file) {
    return this.raw.setInputFiles(selector, file);
  }
  screenshot(path) {
    return this.raw.screenshot({ path, fullPage: true });
  }
  /** Crashes the renderer (CDP Page.crash) and closes the page; whether it crashed. */
  async crash() {
    const crashed = new Promise((resolve) => this.raw.once("crash", () => resolve(true)));
    const session = await this.raw.context().newCDPSession(this.raw);
    session.send("Page.crash").catch(() => {});
    const seen = await Promise.race([crashed, sleep(5000).then(() => false)]);
    await this.raw.close().catch(() => {});
    return seen;
  }
  close(options) {
    return this.raw.close(options);
  }
}

// ---- firefox: puppeteer-core over WebDriver BiDi -------------------------------------------

async function launchFirefox() {
  const browser = await puppeteer.launch({
    browser: "firefox",
    protocol: "webDriverBiDi",
    executablePath: manifest("firefox"),
    headless: true,
    // navigator.storage.persist() asks the user in Firefox: with no user here, the testing
    // prefs answer (granted), as a user who accepts would.
    extraPrefsFirefox: { "dom.storageManager.prompt.testing": true, "dom.storageManager.prompt.testing.allow": true },
  });
  const version = (await browser.version()).replace(/^firefox\//, "");
  return {
    engine: "firefox",
    version,
    can: { crash: false, quota: false },
    async newContext({ viewport } = {}) {
      const context = await browser.createBrowserContext();
      const pages = [];
      return {
        newPage: async () => {
          const page = await context.newPage();
          if (viewport) await page.setViewport(viewport);
          pages.push(new PuppeteerPage(page));
          return pages.at(-1);
        },
        close: () => Promise.all(pages.map((page) => page.close().catch(() => {}))).then(() => context.close()),
      };
    },
    close: () => browser.close(),
  };
}

/** Firefox's report of a fetch that failed (an offline server, a dropped answer). */
const FAILED_FETCH = /^Cross-Origin Request Blocked: .*\(Reason: CORS request did not succeed\)/;

class PuppeteerPage extends BasePage {
  constructor(page) {
    super();
    this.raw = page;
    // A page with unsaved work asks before it is left (the demo editor's `beforeunload`):
    // a test's reload or close leaves anyway, as a user who answers "Leave" does. Firefox
    // otherwise holds the reload on the prompt (Chromium's and WebKit's drivers go on).
    page.on("dialog", (dialog) => {
      if (dialog.type() === "beforeunload") dialog.accept().catch(() => {});
    });
    /** Directories of files chosen through file inputs, removed when the page closes. */
    this.files = [];
  }
  onProblem(print) {
    this.raw.on("pageerror", (error) => {
      if (!FAILED_FETCH.test(error.message)) print(`page error: ${error.message}`);
    });
    this.raw.on("console", (message) => {
      if (message.type() === "error" && !FAILED_FETCH.test(message.text())) print(`page console: ${message.text().slice(0, 300)}`);
    });
  }
  goto(url) {
    return this.raw.goto(url, { timeout: 15_000 });
  }
  reload() {
    return this.raw.reload({ timeout: 15_000 });
  }
  async url() {
    return this.raw.url();
  }
  evaluate(fn, arg) {
    return this.raw.evaluate(fn, arg);
  }
  expose(name, handler) {
    return this.raw.exposeFunction(name, handler);
  }
  clickAt(x, y) {
    return this.raw.mouse.click(x, y);
  }
  async drag(selector, [x0, y0], [x1, y1]) {
    const box = await this.box(selector);
    await this.raw.mouse.move(box.x + x0 * box.width, box.y + y0 * box.height);
    await this.raw.mouse.down();
    await this.raw.mouse.move(box.x + x1 * box.width, box.y + y1 * box.height, { steps: 5 });
    await this.raw.mouse.up();
  }
  async setFile(selector, { name, buffer }) {
    // A real file chosen through the file input (BiDi input.setFiles). Firefox's File reads
    // the disk lazily, as a person's chosen file does: it stays until the page closes (removed
    // at once, IndexedDB could not copy it and aborted the upload's blob write).
    const dir = await mkdtemp(join(tmpdir(), "canvas-scheduler-upload-"));
    this.files.push(dir);
    const path = join(dir, name);
    await writeFile(path, buffer);
    const input = await this.raw.$(selector);
    await input.uploadFile(path);
  }
  screenshot(path) {
    return this.raw.screenshot({ path, fullPage: true });
  }
  async close() {
    try {
      await this.raw.close();
    } finally {
      await Promise.all(this.files.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    }
  }
}

// ---- webkit: WebKitWebDriver, plain WebDriver HTTP ------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function launchWebKit() {
  // The driver allows one session at a time, and now and then never answers a new one
  // (MiniBrowser's launch hangs: seen once in CI, 2026-12-06, with the run's first session
  // started and closed before it). Then it is started again, once, and says so on stderr; a
  // second hang fails the run.
  let driver = null;
  let base = "";
  let stderr = "";
  const stop = () => {
    try {
      if (driver) process.kill(-driver.pid, "SIGTERM");
    } catch {
      // Gone already.
    }
  };
  const startDriver = async () => {
    const port = await freePort();
    // Its own process group: stop() ends xvfb-run, Xvfb, the driver and its browsers together.
    driver = spawn("xvfb-run", ["-a", manifest("webkit-driver"), `--port=${port}`, "--host=127.0.0.1"], {
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    });
    const started = driver;
    started.stderr.on("data", (chunk) => {
      stderr = (stderr + chunk).slice(-2000);
    });
    base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i += 1) {
      try {
        await http("GET", "/status", undefined, 1000);
        break;
      } catch (error) {
        if (i > 100 || started.exitCode !== null) throw new Error(`WebKitWebDriver did not start: ${error.message} ${stderr}`);
        await sleep(100);
      }
    }
  };
  const http = async (method, path, body, timeoutMs = 60_000) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = await response.json();
    if (!response.ok) throw new Error(`WebDriver ${method} ${path}: ${json.value?.error}: ${json.value?.message}`);
    return json.value;
  };
  const startSession = async (viewport) => {
    try {
      return await WebDriverSession.start(http, viewport);
    } catch (error) {
      if (error?.name !== "TimeoutError") throw error;
      console.error(`WebKitWebDriver: a new session did not answer within 60 s; the driver is started again (${stderr.slice(-300)})`);
      stop();
      await startDriver();
      return WebDriverSession.start(http, viewport);
    }
  };
  await startDriver();
  const sessions = new Set();
  process.once("exit", stop);
  const first = await startSession();
  const version = first.version;
  await first.close();
  return {
    engine: "webkit",
    version: `MiniBrowser (WebKitGTK ${version})`,
    can: { crash: false, quota: false },
    async newContext({ viewport } = {}) {
      // A session is a context: its own (ephemeral) website data; its windows share it.
      const session = await startSession(viewport);
      sessions.add(session);
      return {
        newPage: () => session.newPage(),
        close: async () => {
          sessions.delete(session);
          await session.close();
        },
      };
    },
    async close() {
      for (const session of sessions) await session.close().catch(() => {});
      stop();
    },
  };
}

/** One WebDriver session; its commands run one at a time (each first selects its window). */
class WebDriverSession {
  static async start(http, viewport) {
    const value = await http("POST", "/session", { capabilities: { alwaysMatch: {} } });
    const session = new WebDriverSession(http, value.sessionId, value.capabilities.browserVersion);
    await session.command(null, "POST", "/timeouts", { script: 60_000, pageLoad: 15_000 });
    if (viewport) await session.command(null, "POST", "/window/rect", { width: viewport.width, height: viewport.height + 100 }).catch(() => {});
    // The first window stays open on about:blank: closing a session's last window ends it.
    session.keeper = await session.command(null, "GET", "/window");
    return session;
  }

  constructor(http, id, version) {
    this.http = http;
    this.id = id;
    this.version = version;
    this.queue = Promise.resolve();
    this.current = null;
  }

  /** Runs one command in `handle`'s window (none: any), after the ones before it. */
  command(handle, method, path, body) {
    const run = async () => {
      if (handle !== null && this.current !== handle) {
        await this.http("POST", `/session/${this.id}/window`, { handle });
        this.current = handle;
      }
      return this.http(method, `/session/${this.id}${path}`, body);
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => {});
    return result;
  }

  async newPage() {
    const { handle } = await this.command(this.keeper, "POST", "/window/new", { type: "window" });
    return new WebDriverPage(this, handle);
  }

  close() {
    this.ended = true;
    return this.http("DELETE", `/session/${this.id}`).catch(() => {});
  }
}

/** Wraps `fn(arg)` for execute/async: its value, or its error, as JSON. */
const ASYNC_SCRIPT = `const [source, arg, done] = arguments;
Promise.resolve().then(() => (0, eval)("(" + source + ")")(arg)).then(
  (value) => done({ value: value === undefined ? null : value }),
  (error) => done({ error: error instanceof Error ? error.name + ": " + error.message + " (" + error.stack + ")" : String(error) }),
);`;

class WebDriverPage extends BasePage {
  constructor(session, handle) {
    super();
    this.session = session;
    this.handle = handle;
    this.exposed = new Map();
    this.closed = false;
  }
  cmd(method, path, body) {
    return this.session.command(this.handle, method, path, body);
  }
  onProblem() {
    // Plain WebDriver has no console or page-error events.
  }
  async goto(url) {
    await this.cmd("POST", "/url", { url });
    await this.installExposed();
  }
  async reload() {
    await this.cmd("POST", "/refresh", {});
    await this.installExposed();
  }
  url() {
    return this.cmd("GET", "/url");
  }
  async evaluate(fn, arg) {
    const answer = await this.cmd("POST", "/execute/async", { script: ASYNC_SCRIPT, args: [fn.toString(), arg ?? null] });
    if (answer?.error !== undefined) throw new Error(answer.error);
    return answer?.value;
  }
  /**
   * `window[name](x)` in the page reaches `handler(x)`: calls are queued in the page and
   * collected every 100 ms (WebDriver has no binding); installed again after each load.
   */
  async expose(name, handler) {
    this.exposed.set(name, handler);
    if (!this.poller) {
      this.poller = (async () => {
        // Until the page is closed, or its whole session (which closes no page one by one).
        while (!this.closed && !this.session.ended) {
          await sleep(100);
          if (this.closed || this.session.ended) break;
          await this.collectCalls();
        }
      })();
    }
  }
  /** Hands the calls queued in the page to their handlers. */
  async collectCalls() {
    const calls = await this.evaluate(() => (window.__driverCalls ?? []).splice(0)).catch(() => []);
    for (const [called, value] of calls ?? []) this.exposed.get(called)?.(value);
  }
  installExposed() {
    if (this.exposed.size === 0) return undefined;
    return this.evaluate((names) => {
      window.__driverCalls ??= [];
      for (const name of names) window[name] = (value) => void window.__driverCalls.push([name, value]);
    }, [...this.exposed.keys()]);
  }
  /** One pointer action sequence (WebDriver actions), then its input state released. */
  async pointer(actions) {
    await this.cmd("POST", "/actions", { actions: [{ type: "pointer", id: "mouse", parameters: { pointerType: "mouse" }, actions }] });
    await this.cmd("DELETE", "/actions");
  }
  clickAt(x, y) {
    const at = { x: Math.round(x), y: Math.round(y) };
    return this.pointer([{ type: "pointerMove", duration: 0, ...at }, { type: "pointerDown", button: 0 }, { type: "pointerUp", button: 0 }]);
  }
  async drag(selector, [x0, y0], [x1, y1]) {
    const box = await this.box(selector);
    const at = (fx, fy) => ({ x: Math.round(box.x + fx * box.width), y: Math.round(box.y + fy * box.height) });
    const moves = Array.from({ length: 5 }, (_, i) => ({
      type: "pointerMove",
      duration: 20,
      ...at(x0 + ((x1 - x0) * (i + 1)) / 5, y0 + ((y1 - y0) * (i + 1)) / 5),
    }));
    await this.pointer([{ type: "pointerMove", duration: 0, ...at(x0, y0) }, { type: "pointerDown", button: 0 }, ...moves, { type: "pointerUp", button: 0 }]);
  }
  /** A file chosen through the input: a File put in `input.files` (no file dialog here). */
  setFile(selector, { name, mimeType, buffer }) {
    return this.evaluate(
      ([s, n, type, base64]) => {
        const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], n, { type }));
        const input = document.querySelector(s);
        input.files = transfer.files;
        input.dispatchEvent(new Event("change", { bubbles: true }));
      },
      [selector, name, mimeType, Buffer.from(buffer).toString("base64")],
    );
  }
  async screenshot(path) {
    await writeFile(path, Buffer.from(await this.cmd("GET", "/screenshot"), "base64"));
  }
  async close() {
    // The calls the page made since the last collection are not lost with it.
    if (this.poller && !this.session.ended) await this.collectCalls();
    this.closed = true;
    await this.cmd("DELETE", "/window");
    this.session.current = null;
  }
}
