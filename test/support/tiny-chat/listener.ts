import { connect, type Socket } from "node:net";
import { createInterface } from "node:readline";
import type { Credential } from "../../../runner/boundary/gateway/credentials/vault.ts";
import { errorMessage } from "../../../runner/ground/errors.ts";
import {
  type ChatAdapter,
  type GateOffer,
  type ListenerHost,
  parsePressId,
  pressId,
  Unauthorised,
} from "../../../runner/services/listeners/child.ts";
import { ChannelQueues, handOver } from "../../../runner/services/listeners/hand-over.ts";
import { parse, tinyRequest } from "./wire.ts";

/**
 * TEST STAND-IN: tiny chat's listener adapter, written as every platform's
 * is (runner/services/listeners/child.ts AdapterFactory): it holds one
 * `listen` connection to the far side (wire.ts), hands what people say to
 * the server through the shared hand-over (cursor, bots, wake class), says
 * it is typing while a turn runs and posts a notice when one fails, posts a
 * gate's offer with approve and deny buttons, and takes a press back to the
 * server's desk, answering the presser (a whisper) or the room.
 */
export class TinyListener implements ChatAdapter {
  private readonly token: string;
  private readonly address: string;
  private readonly queues: ChannelQueues;
  private socket: Socket | undefined;
  private house = "";

  constructor(
    private readonly host: ListenerHost,
    credential: Credential,
  ) {
    const { token, address } = credential;
    if (typeof token !== "string" || !token || typeof address !== "string" || !address)
      throw new Unauthorised('the credential needs "token" and "address" fields');
    this.token = token;
    this.address = address;
    this.queues = new ChannelQueues(host.note);
  }

  async start(): Promise<void> {
    this.host.status("connecting");
    const [hostname = "127.0.0.1", port] = this.address.split(":");
    const socket = connect(Number(port), hostname);
    this.socket = socket;
    socket.on("error", (error) => this.host.note(`tiny chat: ${errorMessage(error)}`));
    socket.on("close", () => this.host.status("reconnecting", "the listen connection closed"));
    const lines = createInterface({ input: socket });
    const first = new Promise<Record<string, unknown>>((resolve) =>
      lines.once("line", (raw) => resolve(parse(raw) ?? {})),
    );
    this.say({ op: "listen" });
    const answer = await first;
    if (answer.ok !== true) throw new Unauthorised(`tiny chat answered ${String(answer.error)}`);
    this.house = String(answer.house);
    lines.on("line", (raw) => this.onEvent(parse(raw) ?? {}));
    this.host.status("connected");
  }

  async offer(offer: GateOffer): Promise<void> {
    const answer = await tinyRequest(this.address, {
      op: "post",
      token: this.token,
      room: this.roomOf(offer.channel),
      text: `${offer.text}\n\nOffer stands until ${offer.expiresAt}; after that, roster approvals.`,
      buttons: [pressId(offer.gateId, "approve"), pressId(offer.gateId, "deny")],
    });
    if (answer.ok !== true) throw new Error(`tiny chat refused the offer: ${String(answer.error)}`);
  }

  async stop(): Promise<void> {
    this.socket?.destroy();
    await this.queues.drain();
  }

  private say(line: Record<string, unknown>): void {
    this.socket?.write(`${JSON.stringify({ ...line, token: this.token })}\n`);
  }

  private channelOf(room: string): string {
    return `tiny-${this.house}-${room}`;
  }

  private roomOf(channel: string): string {
    return channel.slice(`tiny-${this.house}-`.length);
  }

  private onEvent(event: Record<string, unknown>): void {
    const { room, user } = event;
    if (typeof room !== "string" || typeof user !== "string") return;
    this.host.event();
    const channel = this.channelOf(room);
    if (event.op === "message")
      this.queues.run(channel, () => this.handle(channel, room, user, event));
    if (event.op === "press")
      void this.onPress(channel, room, user, String(event.button)).catch((error: unknown) =>
        this.host.note(`a press was not answered: ${errorMessage(error)}`),
      );
  }

  private handle(
    channel: string,
    room: string,
    user: string,
    event: Record<string, unknown>,
  ): Promise<void> {
    const text = String(event.text ?? "");
    return handOver(this.host, {
      channel,
      id: String(event.id),
      later: (a, b) => Number(a) > Number(b),
      platformChannel: room,
      fromBot: false,
      direct: false,
      mentioned: true,
      message: async () => ({
        channel,
        author: user,
        author_id: `tiny:${user}`,
        standing: "member",
        text,
      }),
      hooks: {
        onStart: () => this.say({ op: "typing", room }),
        onDone: () => undefined,
        onFailed: (error) =>
          void this.post(room, `I couldn't finish that just now: ${error}`).catch(
            (failure: unknown) =>
              this.host.note(`a notice was not posted: ${errorMessage(failure)}`),
          ),
      },
    });
  }

  private async onPress(channel: string, room: string, user: string, button: string) {
    const press = parsePressId(button);
    if (!press) return;
    const answer = await this.host.decide({
      gate_id: press.gateId,
      verdict: press.verdict,
      user: `tiny:${user}`,
      channel,
    });
    await this.post(room, answer.text, answer.private ? user : undefined);
  }

  private async post(room: string, text: string, to?: string): Promise<void> {
    const body = { op: "post", token: this.token, room, text, ...(to ? { to } : {}) };
    const answer = await tinyRequest(this.address, body);
    if (answer.ok !== true) throw new Error(`tiny chat refused: ${String(answer.error)}`);
  }
}
