import { type Static, Type } from "@sinclair/typebox";
import { readCredential } from "../../../runner/boundary/gateway/credentials/vault.ts";
import type { ChatSection } from "../../../runner/ground/config/config-schema.ts";
import type { ChatPlatform } from "../../../runner/services/chat/platform.ts";
import { sendTool } from "../../../runner/services/chat/send-tool.ts";
import { chatSender } from "../../../runner/services/chat/sender.ts";
import { tinyRequest } from "./wire.ts";

/**
 * TEST STAND-IN: "tiny chat", a chat platform written for the test suite in
 * one folder, through the same shape every platform has (runner/services/
 * chat/platform.ts), speaking the made-up line protocol of wire.ts. A room
 * is `tiny-<house>-<room>`; its house is its server. Its bot's vault
 * credential `tiny` holds `token` and `address` (host:port). Nothing outside
 * this folder names it: the test adds it to the list (addChatPlatform), and
 * the config, the box's tools, the action host, the router and the command
 * core learn it from this declaration.
 */
const PREFIX = "tiny-";
const ROOM = /^tiny-([a-z0-9]+)-([a-z0-9]+)$/;

const Payload = Type.Object(
  {
    channel_id: Type.String({ pattern: ROOM.source }),
    text: Type.String({ minLength: 1, maxLength: 2000 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

/** `[chat.from_platform]`: the houses whose word counts, and whether a house's host is an admin. */
const TINY_RULES = {
  tiny_houses: Type.Optional(Type.Array(Type.String({ pattern: "^[a-z0-9]{1,40}$" }))),
  tiny_hosts_admin: Type.Optional(Type.Boolean()),
};
type TinyRules = Static<ReturnType<typeof Type.Object<typeof TINY_RULES>>>;
const rulesOf = (chat: ChatSection | undefined) => (chat?.from_platform ?? {}) as TinyRules;

const tinySender = chatSender<Payload>({
  schema: Payload,
  label: "Tiny",
  platform: "tiny",
  parts: (text) => [text],
  where: (payload) => payload.channel_id,
  destination: (payload) => `room ${payload.channel_id}`,
  async post(payload, parts, via) {
    const bot = readCredential(via.vault, via.bot);
    const address = typeof bot?.address === "string" ? bot.address : "";
    const ids: string[] = [];
    for (const [index, text] of parts.entries()) {
      const done = via.ledger.sent(index, payload.channel_id, text);
      if (done) {
        ids.push(done);
        continue;
      }
      const room = ROOM.exec(payload.channel_id)?.[2] ?? "";
      const answer = await tinyRequest(address, { op: "post", token: bot?.token, room, text });
      if (answer.ok !== true) throw new Error(`tiny chat refused: ${String(answer.error)}`);
      via.ledger.record(index, payload.channel_id, text, String(answer.id));
      ids.push(String(answer.id));
    }
    return { ids, roster: true };
  },
  idField: "message_id",
});

export const tinyChat: ChatPlatform = {
  name: "tiny",
  channelPrefix: PREFIX,
  bot: true,
  people: true,
  serverOf: (channelId) => {
    const house = ROOM.exec(channelId)?.[1];
    return house ? `tiny-${house}` : undefined;
  },
  fromPlatform: TINY_RULES,
  send: sendTool({
    label: "Send to Tiny",
    description: "Post a message to a tiny chat room.",
    text: "the message",
    rationale: true,
  }),
  connection: {
    summary: "tiny chat's bot (a stand-in for the test suite)",
    hosts: ["tiny.invalid"],
    inject: { header: "authorization", value: "Tiny {token}" },
    secretField: "token",
    verify: { method: "GET", path: "/me" },
  },
  sender: tinySender,
  listener: async () => {
    const { TinyListener } = await import("./listener.ts");
    return (host, credential) => new TinyListener(host, credential);
  },
  vouch: {
    named: (server, chat) => rulesOf(chat).tiny_houses?.includes(server) === true,
    admits: (facts, chat) =>
      rulesOf(chat).tiny_hosts_admin && facts.manageServer
        ? "org.toml [chat.from_platform] tiny_hosts_admin (you host the house)"
        : undefined,
  },
};
