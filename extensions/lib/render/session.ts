/**
 * One fetch_pages call's browser: opened at the first page that needs
 * rendering (most calls need none, and a browser costs a start), shared by
 * the call's pages one at a time (a browser per page would multiply its
 * memory), and closed when the call ends.
 */
import type { Rendered, Renderer, RenderLimits } from "./browser-render.ts";

export class RenderSession {
  private opened: Promise<Renderer | string> | undefined;
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly limits?: RenderLimits) {}

  /** The page rendered, or why it could not be. */
  render(url: string): Promise<Rendered | string> {
    const next = this.turn.then(async () => {
      const renderer = await this.renderer();
      if (typeof renderer === "string") return renderer;
      try {
        return await renderer.render(url, await this.bounds());
      } catch (error) {
        return `the browser failed (${(error as Error).message.split("\n")[0]})`;
      }
    });
    this.turn = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    const renderer = await this.opened;
    if (renderer && typeof renderer !== "string") await renderer.close();
  }

  private renderer(): Promise<Renderer | string> {
    this.opened ??= (async () => {
      const { Renderer } = await import("./browser-render.ts");
      return Renderer.open(await this.bounds());
    })();
    return this.opened;
  }

  private async bounds(): Promise<RenderLimits> {
    if (this.limits) return this.limits;
    const { RENDER_LIMITS } = await import("./browser-render.ts");
    return RENDER_LIMITS;
  }
}

/** The line a rendered page's answer starts with: why, what it cost, what the door said. */
export function renderedNote(rendered: Rendered, reason: string): string {
  const parts = [
    `rendered in a browser (${reason}): ${rendered.requests} requests, ${Math.round(rendered.bytes / 1024)} KB`,
  ];
  if (rendered.cut) parts.push("it never settled, so this is what it had at the limit");
  if (rendered.refused.length) parts.push(`not loaded: ${rendered.refused.join("; ")}`);
  if (rendered.blocked.length) parts.push(`not allowed: ${rendered.blocked.join(", ")}`);
  return `(${parts.join("; ")})`;
}
