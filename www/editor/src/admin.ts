// The reference server's admin API (www/server/README.md): its fault switches and its state.
// Only the demo uses these; a real editor talks to its server through the scheduler alone.

export interface Faults {
  latencyMs: number;
  dropAfterApplyRate: number;
  serverErrorRate: number;
  tooManyRate: number;
  retryAfterSeconds: number;
  offline: boolean;
}

export interface FaultCounters {
  draws: number;
  serverErrors: number;
  tooMany: number;
  dropped: number;
  offlineDestroyed: number;
}

export interface FaultReport {
  config: Faults;
  counters: FaultCounters;
}

export class ServerAdmin {
  /** `token`: the server's admin token (`--admin-token`), sent as `x-admin-token`. */
  constructor(
    readonly server: string,
    private readonly token: string,
  ) {}

  private async json(path: string, init?: RequestInit): Promise<unknown> {
    const headers = { ...(init?.headers as Record<string, string> | undefined), "x-admin-token": this.token };
    const response = await fetch(`${this.server}${path}`, { ...init, headers, signal: AbortSignal.timeout(5000) });
    const body: unknown = await response.json();
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${JSON.stringify(body)}`);
    return body;
  }

  /** Current fault settings. */
  async faults(): Promise<FaultReport> {
    return (await this.json("/admin/faults")) as FaultReport;
  }

  /** Merges `changes` into the live fault settings. */
  async setFaults(changes: Partial<Faults>): Promise<FaultReport> {
    return (await this.json("/admin/faults", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(changes),
    })) as FaultReport;
  }

  /** The server's canvases `{id: {version, document}}` (used only to resync after a rejection
   * whose answer carried no canonical state). */
  async canvases(): Promise<Record<string, unknown>> {
    const state = (await this.json("/admin/state")) as { canvases?: Record<string, unknown> };
    return state.canvases ?? {};
  }

  assetUrl(assetId: string): string {
    return `${this.server}/assets/${encodeURIComponent(assetId)}`;
  }
}
