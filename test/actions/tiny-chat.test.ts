import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ExtensionAPI, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import registerActions from "../../extensions/proposals.ts";
import { sendToolList } from "../../runner/ground/chat/terms.ts";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { serverOf } from "../../runner/records/channels/channel-class.ts";
import { setTrusted } from "../../runner/records/channels/designations.ts";
import { readMessages } from "../../runner/records/channels/store.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { addChatPlatform } from "../../runner/services/chat/platforms.ts";
import { readCursor } from "../../runner/services/listeners/cursors.ts";
import { standingOf } from "../../runner/services/slash/authority.ts";
import { answerLine } from "../../runner/services/slash/core.ts";
import { findRecipe } from "../../runner/work/connections/recipes.ts";
import { submitAction } from "../support/action-host.ts";
import { until } from "../support/chat-turns.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { startTinyServer, type TinyServer } from "../support/tiny-chat/listeners.ts";
import { tinyChat } from "../support/tiny-chat/platform.ts";
import { TinyChat } from "../support/tiny-chat/wire.ts";

/**
 * A chat platform is one folder and one line: "tiny chat", written for the
 * suite in test/support/tiny-chat/ and added to the list here (the list's
 * one way in besides its own line), is learnt by everything else from its
 * declaration — the config's keys and id rules, the box's send tool, the
 * connection recipe, a channel class's servers, who its people are — and
 * its sends go through the real gateway and action host to its far side,
 * at once or after a `tiny:` approver approves from chat. Its listener
 * adapter runs as every platform's does: a child process speaking the IPC
 * protocol, kept by the server's own ListenerSupervisor, whose messages go
 * to the session router and whose presses go to the desk's offers. The one
 * difference: the child is `roster server listener` with tiny chat added to
 * the list (support/tiny-chat/listener-child.ts), not the roster command.
 * Here the deployment has no model, so a message reaches the router and the
 * session it opens refuses to start; test/listeners/tiny-chat.test.ts
 * follows one into a warm session in a real box and back out.
 */
const TOKEN = "tiny-bot-token";
const LOBBY = "tiny-home-lobby";
const VAULT = "tiny-home-vault";

const ORG = `
[[action]]
name = "tiny-send"
executor = "tiny"
trust = "auto"

[[trust]]
intent = "tiny-send"
match = { channel_id = "${VAULT}" }
level = "gate"

[chat]
approvers = ["tiny:ana"]
approvals_channel = "${LOBBY}"

[chat.from_platform]
tiny_houses = ["home"]
tiny_hosts_admin = true
`;

let env: GatewayEnv;
let tiny: TinyChat;

beforeAll(async () => {
  addChatPlatform(tinyChat);
  tiny = await TinyChat.start(TOKEN);
  env = await startGatewayEnv(ORG);
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(
    join(env.paths.config, "workers", "elf", "worker.toml"),
    'name = "elf"\n\n[channels]\ntiny = "tiny"\n',
  );
  await env.writeVault("tiny", { token: TOKEN, address: tiny.address });
  // the gateway reads the new worker as it starts
  await env.restart();
});
afterAll(async () => {
  await env?.cleanup();
  await tiny?.stop();
  vi.unstubAllEnvs();
});

describe("a chat platform written in one folder", () => {
  it("is learnt from its declaration: config keys, id rules, send tool, recipe, servers", async () => {
    const config = loadConfig(env.paths.config);
    expect(config.errors.map(formatConfigError)).toEqual([]);
    expect(config.workers.get("elf")?.channels).toEqual({ tiny: "tiny" });
    expect(serverOf(LOBBY)).toBe("tiny-home");
    expect(findRecipe("tiny")).toMatchObject({ bindsChannel: "tiny", secretField: "token" });

    // the box offers its send tool, as the host lists it
    vi.stubEnv("ROSTER_CHAT_SENDS", sendToolList());
    const tools = new Map<string, ToolDefinition>();
    registerActions({
      registerTool: (tool: ToolDefinition) => tools.set(tool.name, tool),
    } as unknown as ExtensionAPI);
    expect(tools.get("tiny_send")?.description).toMatch(/^Post a message to a tiny chat room\./);

    // its keys and people are checked as every platform's are: a stranger key is refused
    await writeFile(
      join(env.paths.config, "workers", "elf", "worker.toml"),
      'name = "elf"\n\n[channels]\ntiny = "tiny"\nsmall = "x"\n',
    );
    const bad = loadConfig(env.paths.config).errors.map(formatConfigError);
    expect(bad).toEqual([
      `${join(env.paths.config, "workers", "elf", "worker.toml")}:5: channels.small: unknown key`,
    ]);
    await writeFile(
      join(env.paths.config, "workers", "elf", "worker.toml"),
      'name = "elf"\n\n[channels]\ntiny = "tiny"\n',
    );
  });

  it("judges its people by its own [chat.from_platform] keys, only in the houses named", () => {
    const chat = loadConfig(env.paths.config).org.chat;
    expect(standingOf({ user: "tiny:ana" }, chat)).toEqual({
      standing: "approver",
      rule: "org.toml [chat] approvers",
    });
    const host = { user: "tiny:bo", platform: { server: "home", manageServer: true } };
    expect(standingOf(host, chat).standing).toBe("admin");
    const elsewhere = { user: "tiny:bo", platform: { server: "away", manageServer: true } };
    expect(standingOf(elsewhere, chat).standing).toBe("none");
  });

  it("sends through the action host to its far side, over its own wire", async () => {
    const token = await env.token("elf", "run-tiny-send");
    const reply = await submitAction(env, token, {
      intent: "tiny-send",
      payload: { channel_id: LOBBY, text: "hello from elf" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(tiny.posts).toContainEqual({ room: "lobby", text: "hello from elf", id: "m1" });
  });

  it("holds a gated send until a tiny approver approves it from chat", async () => {
    const token = await env.token("elf", "run-tiny-gate");
    const reply = await submitAction(env, token, {
      intent: "tiny-send",
      payload: { channel_id: VAULT, text: "the vault is open" },
      rationale: "ana asked",
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    const id = String(reply.body.gate_id);
    expect(tiny.posts.map((post) => post.text)).not.toContain("the vault is open");

    const asked = { paths: env.paths, worker: "elf", channel: LOBBY, asker: { user: "tiny:ana" } };
    const said = await answerLine(asked, `/approvals approve ${id}`);
    expect(said.text).not.toMatch(/^Not done/);
    expect(findGate(env.paths, id)?.state).toBe("executed");
    expect(tiny.posts).toContainEqual({ room: "vault", text: "the vault is open", id: "m2" });
  });
});

describe("its listener, run as the server runs every platform's", () => {
  let server: TinyServer;
  const listeners = () => server.listeners;

  beforeAll(async () => {
    server = startTinyServer(env.paths, env.root);
    await until(
      () => listeners().statuses()[0]?.state === "connected" && tiny.listening === 1,
      "tiny chat's listener connected",
      20_000,
    );
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("receives: what a person says in a room reaches the worker's conversation there", async () => {
    expect(listeners().statuses()).toMatchObject([{ worker: "elf", platform: "tiny" }]);
    tiny.say("lobby", "ana", "elf, are you there?");
    const heard = await until(
      () => readMessages(env.paths, LOBBY).find((m) => m.content === "elf, are you there?"),
      "the message in the lobby's history",
      20_000,
    );
    expect(heard).toMatchObject({ author: "ana", author_id: "tiny:ana", role: "user" });
    // recorded and queued, the child was told so: its cursor is past the message
    await until(() => readCursor(env.paths, "elf", LOBBY)?.last_id === "1", "the cursor moved");
    // the router opened elf's session for the lobby: this deployment has no model, so the
    // session refuses to start, and the turn's failure comes back to the room over the wire
    const notice = await until(
      () => tiny.posts.find((post) => post.text.startsWith("I couldn't finish that")),
      "the failure notice in the lobby",
      20_000,
    );
    expect(notice).toMatchObject({ room: "lobby" });
    expect(notice.text).toContain("no model configured");
  });

  it("approves: a gated send is offered in the approvals room and an approver's press sends it", async () => {
    await setTrusted(env.paths, LOBBY, true);
    const token = await env.token("elf", "run-tiny-press");
    const reply = await submitAction(env, token, {
      intent: "tiny-send",
      payload: { channel_id: VAULT, text: "the vault is open again" },
      rationale: "bo asked",
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    const id = String(reply.body.gate_id);

    // the server offers what is due on every tick; here once, by hand
    listeners().offerDue();
    const offer = await until(
      () => tiny.posts.find((post) => post.buttons?.includes(`roster-gate:${id}:approve`)),
      "the offer in the lobby",
      20_000,
    );
    expect(offer.room).toBe("lobby");
    expect(offer.text).toContain("the vault is open again");
    expect(offer.text).toContain("Why: bo asked");

    // someone who is not an approver is told so, alone; the gate waits
    tiny.press(offer.id, `roster-gate:${id}:approve`, "bo");
    const refused = await until(() => tiny.posts.find((post) => post.to === "bo"), "the refusal");
    expect(refused.text).toContain("not one of the approvers");
    expect(findGate(env.paths, id)?.state).toBe("pending");

    tiny.press(offer.id, `roster-gate:${id}:approve`, "ana");
    const settled = await until(
      () => tiny.posts.find((post) => post.text.includes(`${id} approved and sent`)),
      "the outcome in the lobby",
      20_000,
    );
    expect(settled).toMatchObject({ room: "lobby" });
    expect(settled.to).toBeUndefined();
    expect(findGate(env.paths, id)).toMatchObject({ state: "executed", decided_by: "tiny:ana" });
    expect(tiny.posts).toContainEqual(
      expect.objectContaining({ room: "vault", text: "the vault is open again" }),
    );
  });
});
