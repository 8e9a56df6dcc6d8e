import { createServer, type Server, type Socket } from "node:net";
import { createInterface } from "node:readline";

/**
 * TEST STAND-IN, not a real service: the far side of "tiny chat", a chat
 * made up for the test suite so a platform can be written in one folder and
 * proved end to end. Its wire is newline-delimited JSON over TCP, one object
 * a line: a bot sends `{"op":"post","token","room","text"}` and is answered
 * `{"ok":true,"id"}` (or `{"ok":false,"error"}` for a wrong token); the
 * test's people say things with `say`, which the server pushes to every
 * bot connected with `{"op":"listen","token"}` as `{"op":"message","room",
 * "user","text"}`.
 */
export interface TinyPost {
  room: string;
  text: string;
  id: string;
}

export class TinyChat {
  readonly posts: TinyPost[] = [];
  private readonly listeners = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly token: string,
  ) {}

  static async start(token: string): Promise<TinyChat> {
    const server = createServer();
    const chat = new TinyChat(server, token);
    server.on("connection", (socket) => chat.serve(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return chat;
  }

  /** Where a bot connects: `host:port`. */
  get address(): string {
    const bound = this.server.address();
    return typeof bound === "object" && bound ? `127.0.0.1:${bound.port}` : "";
  }

  /** A person writes in a room: every listening bot hears it. */
  say(room: string, user: string, text: string): void {
    const line = `${JSON.stringify({ op: "message", room, user, text })}\n`;
    for (const socket of this.listeners) socket.write(line);
  }

  get listening(): number {
    return this.listeners.size;
  }

  async stop(): Promise<void> {
    for (const socket of this.listeners) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    socket.on("error", () => this.listeners.delete(socket));
    socket.on("close", () => this.listeners.delete(socket));
    createInterface({ input: socket }).on("line", (raw) => {
      const line = parse(raw);
      const answer = (body: Record<string, unknown>) => socket.write(`${JSON.stringify(body)}\n`);
      if (line?.token !== this.token) return answer({ ok: false, error: "bad token" });
      if (line.op === "listen") {
        this.listeners.add(socket);
        return answer({ ok: true });
      }
      if (line.op !== "post" || typeof line.room !== "string" || typeof line.text !== "string")
        return answer({ ok: false, error: "bad request" });
      const post = { room: line.room, text: line.text, id: `m${this.posts.length + 1}` };
      this.posts.push(post);
      return answer({ ok: true, id: post.id });
    });
  }
}

function parse(raw: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === "object" && value !== null
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** One request on a fresh connection, its one answer. */
export async function tinyRequest(
  address: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const [host, port] = address.split(":");
  const { connect } = await import("node:net");
  const socket = connect(Number(port), host ?? "127.0.0.1");
  socket.write(`${JSON.stringify(body)}\n`);
  try {
    for await (const raw of createInterface({ input: socket })) return parse(raw) ?? {};
    return { ok: false, error: "closed" };
  } finally {
    socket.destroy();
  }
}
