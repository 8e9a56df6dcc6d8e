import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { doorDir, STANDALONE_DOOR } from "../../runner/boundary/gateway/doors/door.ts";
import { Gateway } from "../../runner/boundary/gateway/process/gateway.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { lazyActionHost } from "../../runner/services/actions/lazy-host.ts";
import { addChatPlatform } from "../../runner/services/chat/platforms.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { chatWorker, messageOf, until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { startTinyServer, type TinyServer } from "../support/tiny-chat/listeners.ts";
import { tinyChat } from "../support/tiny-chat/platform.ts";
import { TinyChat } from "../support/tiny-chat/wire.ts";

/**
 * Tiny chat, the platform written for the suite in one folder and added to
 * the list (test/actions/tiny-chat.test.ts proves the rest), in a warm
 * session: what a person says in a tiny room goes through its listener
 * child, the supervisor and the router into elf's session in a real box,
 * whose scripted model answers with tiny_send, which the gateway's action
 * host posts back over tiny chat's wire. The gateway runs in the test's
 * process (as `roster gateway start` runs it, with its door), so it knows
 * tiny chat too; the session finds it and uses it.
 */
const docker = await testDocker();

const TOKEN = "tiny-session-token";
const LOBBY = "tiny-home-lobby";

describe.skipIf(!docker)("tiny chat in a warm session", () => {
  let model: ModelServer;
  let tiny: TinyChat;
  let deployment: RosterRoot;
  let gateway: Gateway;
  let server: TinyServer;

  beforeAll(async () => {
    addChatPlatform(tinyChat);
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 6 }, () => chatWorker("tiny_send")));
    tiny = await TinyChat.start(TOKEN);
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "TINY-KEY",
      extraOrg: '[[action]]\nname = "tiny-send"\nexecutor = "tiny"\ntrust = "auto"\n',
    });
    await appendFile(
      join(deployment.paths.config, "workers/elf/worker.toml"),
      '\n[channels]\ntiny = "tiny"\n',
    );
    await storeCredential(deployment.paths.vault, "tiny", { token: TOKEN, address: tiny.address });
    gateway = await Gateway.start({
      paths: deployment.paths,
      listen: [{ host: "127.0.0.1", port: deployment.gatewayPort }],
      door: doorDir(deployment.paths.state, STANDALONE_DOOR),
      actions: lazyActionHost,
    });
    server = startTinyServer(deployment.paths, deployment.root);
    await until(
      () => server.listeners.statuses()[0]?.state === "connected" && tiny.listening === 1,
      "tiny chat's listener connected",
      30_000,
    );
  });
  afterAll(async () => {
    await server?.stop();
    await gateway?.stop();
    await tiny?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("receives a room's message as a turn of elf's session, and its tiny_send answers in the room", {
    tags: ["engine"],
  }, async () => {
    tiny.say("lobby", "ana", "send: hello ana");
    const answer = await until(
      () => tiny.posts.find((post) => post.text === "hello ana"),
      "elf's answer in the lobby",
      180_000,
    );
    expect(answer.room).toBe("lobby");
    // the turn the model was given: the message, where it was said
    expect(model.requests.map(messageOf).find(Boolean)).toEqual({
      channel: LOBBY,
      text: "send: hello ana",
    });
    expect(tiny.typing).toContain("lobby");
    // a session of elf's, in a box, for the lobby
    const sessions = listRuns(deployment.paths.state, "elf")
      .map((run) => readRecord(run.dir))
      .filter((record) => record?.kind === "session");
    expect(sessions).toMatchObject([{ channel_id: LOBBY }]);
  });
});
