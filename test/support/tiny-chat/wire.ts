import { createServer, type Server, type Socket } from "node:net";
import { createInterface } from "node:readline";

/**
 * TEST STAND-IN, not a real service: the far side of "tiny chat", a chat
 * made up for the test suite so a platform can be written in one folder and
 * proved end to end. Its wire is newline-delimited JSON over TCP, one object
 * a line: a bot sends `{"op":"post","token","room","text"}` and is answered
 * `{"ok":true,"id"}` (or `{"ok":false,"error"}` for a wrong token). A post
 * may carry `buttons` (names the bot reads back when pressed) or be `to`
 * one person only (a whisper). A bot that connects with `{"op":"listen",
 * "token"}` (answered `{"ok":true,"house"}`) keeps its connection and is
 * pushed what the test's people do: `say` as `{"op":"message","id","room",
 * "user","text"}`, `press` as `{"op":"press","post","button","room",
 * "user"}`; on it the bot may say `{"op":"typing","room"}` while it works.
 * Ids of what people say count up, so a bot can tell which is later.
 */
export interface TinyPost {
  room: string;
  text: string;
  id: string;
  buttons?: string[];
  to?: string;
}

export class TinyChat {
  readonly posts: TinyPost[] = [];
  /** The rooms a bot said it is working in, in order. */
  readonly typing: string[] = [];
  private readonly listeners = new Set<Socket>();
  private said = 0;
  private constructor(
    private readonly server: Server,
    readonly token: string,
    readonly house: string,
  ) {}

  static async start(token: string, house = "home"): Promise<TinyChat> {
    const server = createServer();
    const chat = new TinyChat(server, token, house);
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
    this.push({ op: "message", id: String(++this.said), room, user, text });
  }

  /** A person presses one of a post's buttons: every listening bot hears it. */
  press(post: string, button: string, user: string): void {
    const pressed = this.posts.find((p) => p.id === post);
    if (!pressed?.buttons?.includes(button))
      throw new Error(`post ${post} has no button ${button}`);
    this.push({ op: "press", post, button, room: pressed.room, user });
  }

  private push(event: Record<string, unknown>): void {
    const line = `${JSON.stringify(event)}\n`;
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
        return answer({ ok: true, house: this.house });
      }
      if (line.op === "typing" && typeof line.room === "string") {
        this.typing.push(line.room);
        return;
      }
      if (line.op !== "post" || typeof line.room !== "string" || typeof line.text !== "string")
        return answer({ ok: false, error: "bad request" });
      const post: TinyPost = { room: line.room, text: line.text, id: `m${this.posts.length + 1}` };
      if (Array.isArray(line.buttons)) post.buttons = line.buttons.map(String);
      if (typeof line.to === "string") post.to = line.to;
      this.posts.push(post);
      return answer({ ok: true, id: post.id });
    });
  }
}

export function parse(raw: string): Record<string, unknown> | undefined {
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
