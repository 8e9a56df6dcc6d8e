import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordedClass } from "../../runner/records/channels/surface-class.ts";
import { readCursor } from "../../runner/services/listeners/cursors.ts";
import { readListenerStatuses } from "../../runner/services/listeners/supervisor.ts";
import { bindElf, chatWorker, lazyServer, until } from "../support/chat-turns.ts";
import { DiscordStandIn } from "../support/discord-stand-in.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * A Discord connection's edge written for the public roster, `surfaces =
 * ["public"]` or `["private"]`: the bot's listener reads each room's class
 * from Discord's permissions (a room @everyone can't view is private) and
 * hands on only the rooms of the edge's class.
 */
const docker = await testDocker();

const TOKEN = "discord-classes-test-token";
const GUILD = "810000000000000041";
const HALL = "820000000000000041";
const STAFF = "820000000000000042";
const ANA = { id: "830000000000000041", username: "ana" };
const STAFF_ID = `discord-${GUILD}-${STAFF}`;
const HALL_ID = `discord-${GUILD}-${HALL}`;

const edge = (surfaces: string) =>
  `provider = "discord"\nhosts = ["discord.com"]\n\n[grant.elf]\nsurfaces = [${surfaces}]\n`;

describe.skipIf(!docker)("public and private Discord rooms at the bot's listener", () => {
  let model: ModelServer;
  let discord: DiscordStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  const history = (channel: string): string[] => {
    try {
      return readFileSync(
        join(deployment.paths.data, "channels", channel, "messages.jsonl"),
        "utf8",
      )
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { content: string }).content);
    } catch {
      return [];
    }
  };
  const post = (channel: string, content: string) =>
    discord.post({
      channel_id: channel,
      guild_id: GUILD,
      author: ANA,
      content: `<@${discord.botUserId}> ${content}`,
      mentions: [discord.botUserId],
    });
  const connected = () =>
    until(
      () => readListenerStatuses(deployment.paths).find((one) => one.state === "connected"),
      "the listener to connect",
    );

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    model.play(...Array.from({ length: 20 }, () => chatWorker("discord_send")));
    discord = await DiscordStandIn.start({
      token: TOKEN,
      channels: [HALL, STAFF],
      users: [ANA.id],
      heartbeatInterval: 1_000,
    });
    discord.permissions.hide(STAFF);
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "CLASSES-KEY",
      extraOrg: '[[action]]\nname = "discord-send"\nexecutor = "discord"\n',
    });
    await bindElf(deployment, { discord: { token: TOKEN, api_base: discord.apiBase } });
    await mkdir(join(deployment.paths.config, "connections"), { recursive: true });
    await writeFile(join(deployment.paths.config, "connections/discord.toml"), edge('"public"'));
  });
  afterAll(async () => {
    await server.stop();
    await discord?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("under surfaces = [\"public\"], a private room's message is dropped and a public room's heard", async () => {
    await server.start();
    await connected();
    const secret = post(STAFF, "send: staff only");
    // dropped: read past (its cursor moves) and never recorded, once its class is read
    await until(
      () => readCursor(deployment.paths, "elf", STAFF_ID)?.last_id === secret.id,
      "the private room's message to be read past",
    );
    expect(recordedClass(STAFF_ID, deployment.paths)).toBe("private");
    expect(history(STAFF_ID)).toEqual([]);
    post(HALL, "send: hello hall");
    await until(
      () => history(HALL_ID).find((text) => text.endsWith("send: hello hall")),
      "the public room's message to be heard",
    );
    expect(recordedClass(HALL_ID, deployment.paths)).toBe("public");
    // Discord was asked, in its own shapes, who may see each room
    expect(discord.requests.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining([
        `GET /api/v10/channels/${STAFF}`,
        `GET /api/v10/guilds/${GUILD}/roles`,
      ]),
    );
  });

  it('under surfaces = ["private"], the private room is heard', async () => {
    await server.stop();
    await writeFile(join(deployment.paths.config, "connections/discord.toml"), edge('"private"'));
    await server.start();
    await connected();
    post(STAFF, "send: staff again");
    await until(
      () => history(STAFF_ID).find((text) => text.endsWith("send: staff again")),
      "the private room's message to be heard",
    );
    // the message dropped before stays dropped: it was read past, not queued
    expect(history(STAFF_ID).some((text) => text.endsWith("staff only"))).toBe(false);
  });
});
