import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * What the scripted provider stand-ins share (model-server.ts for pi's
 * OpenAI-compatible chat, anthropic-model-server.ts, responses-model-server.ts):
 * a script of steps played in order, and an HTTP server on a port of its own.
 * Each stand-in speaks its provider's wire protocol in `handle`, takes its
 * next step with `nextStep`, and says in `failure` how its provider reports
 * an error of its own.
 */
export abstract class ScriptedServer<Step> {
  private readonly steps: Step[];
  private server: Server | undefined;

  constructor(script: Step[] = []) {
    this.steps = [...script];
  }

  /** Appends steps to the script. */
  play(...steps: Step[]): void {
    this.steps.push(...steps);
  }

  /** Drops steps not yet played (a test that ended early leaves none behind for the next). */
  reset(): void {
    this.steps.length = 0;
  }

  /** Steps not yet played. */
  get remaining(): number {
    return this.steps.length;
  }

  async start(host = "127.0.0.1", port = 0): Promise<this> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify(this.failure(String(error))));
      });
    });
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    this.server = server;
    return this;
  }

  get port(): number {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error(`${this.constructor.name} is not listening`);
    return address.port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    this.server = undefined;
  }

  /** The next step, or `exhausted` when the script has none left. */
  protected nextStep(exhausted: Step): Step {
    return this.steps.shift() ?? exhausted;
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;

  /** The provider's error body for a failure of the stand-in itself. */
  protected abstract failure(message: string): unknown;
}
