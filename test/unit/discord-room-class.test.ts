import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judge } from "../../runner/boundary/gateway/judging/judge.ts";
import { normalisePath } from "../../runner/boundary/gateway/judging/request-facts.ts";
import { listenerScope } from "../../runner/ground/config/edge-scope.ts";
import { formatConfigError, loadConfig } from "../../runner/ground/config/load.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { classAdmits } from "../../runner/records/channels/channel-class.ts";
import { recordClass, recordedClass } from "../../runner/records/channels/surface-class.ts";
import { discordRoomClass } from "../../runner/services/chat/discord/visibility.ts";
import { facts } from "../support/facts.ts";

/**
 * A Discord room is public or private by Discord's own permissions: the
 * listener reads them and records the class, and a `public` / `private`
 * class — on a connection's edge at the door and at the bot's listener, on
 * a grant's or action's `channels` — admits a room only by what is recorded.
 */
const GUILD = "1015381923845000001";
const VIEW = String(1 << 10);

/** GET /guilds/{id}/roles, as Discord answers it (fields roster doesn't read left in). */
const roles = (everyone: string) => [
  {
    id: GUILD,
    name: "@everyone",
    color: 0,
    hoist: false,
    position: 0,
    permissions: everyone,
    managed: false,
    mentionable: false,
    flags: 0,
  },
  { id: "1015381923845000099", name: "staff", position: 1, permissions: "8", flags: 0 },
];

/** GET /channels/{id} for a guild text channel, as Discord answers it. */
const channel = (overwrites: Array<{ id: string; type: number; allow: string; deny: string }>) => ({
  id: "1451951375079000001",
  type: 0,
  guild_id: GUILD,
  name: "general",
  position: 3,
  parent_id: "1451951375079000000",
  nsfw: false,
  rate_limit_per_user: 0,
  last_message_id: null,
  topic: null,
  flags: 0,
  permission_overwrites: overwrites,
});

describe("a Discord room's class, from Discord's permissions", () => {
  // @everyone's usual permissions: view, send, read history and more (1071698660929)
  const usual = "1071698660929";

  it("a room @everyone can view is public; one whose overwrite denies @everyone VIEW_CHANNEL is private", () => {
    expect(discordRoomClass(GUILD, channel([]), roles(usual))).toBe("public");
    // a member's overwrite (type 1) for someone else changes nothing for @everyone
    expect(
      discordRoomClass(
        GUILD,
        channel([{ id: "830000000000000001", type: 1, allow: "0", deny: VIEW }]),
        roles(usual),
      ),
    ).toBe("public");
    const hidden = channel([
      { id: GUILD, type: 0, allow: "0", deny: VIEW },
      { id: "1015381923845000099", type: 0, allow: VIEW, deny: "0" },
    ]);
    expect(discordRoomClass(GUILD, hidden, roles(usual))).toBe("private");
  });

  it("@everyone without VIEW_CHANNEL in the guild makes every room private unless its overwrite allows it", () => {
    const noView = String(BigInt(usual) & ~(1n << 10n));
    expect(discordRoomClass(GUILD, channel([]), roles(noView))).toBe("private");
    expect(
      discordRoomClass(
        GUILD,
        channel([{ id: GUILD, type: 0, allow: VIEW, deny: "0" }]),
        roles(noView),
      ),
    ).toBe("public");
    // ADMINISTRATOR on @everyone sees everything
    expect(
      discordRoomClass(
        GUILD,
        channel([{ id: GUILD, type: 0, allow: "0", deny: VIEW }]),
        roles(String(8)),
      ),
    ).toBe("public");
  });

  it("without @everyone among the roles the class can't be known", () => {
    expect(discordRoomClass(GUILD, channel([]), roles(usual).slice(1))).toBeUndefined();
  });
});

describe("public and private classes admit a room only by its recorded class", () => {
  let root: string;
  const before = process.env.ROSTER_ROOT;
  const PUBLIC_ROOM = `discord-${GUILD}-1451951375079000001`;
  const PRIVATE_ROOM = `discord-${GUILD}-1451951375079000002`;
  const UNREAD_ROOM = `discord-${GUILD}-1451951375079000003`;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "roster-classes-"));
    // the deployment whose data the door and the listeners read (ROSTER_ROOT, as a server sets it)
    process.env.ROSTER_ROOT = root;
    const paths = rosterPaths();
    await recordClass(paths, PUBLIC_ROOM, "public");
    await recordClass(paths, PRIVATE_ROOM, "private");
    const files: Record<string, string> = {
      "config/org.toml": "",
      "config/workers/pub/worker.toml": 'name = "pub"\n',
      "config/workers/priv/worker.toml": 'name = "priv"\n',
      "config/connections/discord.toml": [
        'provider = "discord"',
        'hosts = ["discord.com"]',
        "",
        "[grant.pub]",
        'surfaces = ["public"]',
        "",
        "[grant.priv]",
        'surfaces = ["private", "dm"]',
        "",
      ].join("\n"),
      "config/vault/discord.json": "{}",
    };
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(root, path, ".."), { recursive: true });
      await writeFile(join(root, path), text);
    }
  });
  afterAll(async () => {
    if (before === undefined) delete process.env.ROSTER_ROOT;
    else process.env.ROSTER_ROOT = before;
    await rm(root, { recursive: true, force: true });
  });

  const config = () => {
    const loaded = loadConfig(join(root, "config"), { vaultDir: join(root, "config/vault") });
    expect(loaded.errors.map(formatConfigError)).toEqual([]);
    return loaded;
  };
  const door = (worker: string, channelId: string) => {
    const decision = judge(
      config().grants,
      facts({
        subject: `org/${worker}`,
        method: "POST",
        host: "discord.com",
        path: normalisePath(`/api/v10/channels/${channelId}/messages`),
      }),
      "request",
    );
    return [decision.verdict, decision.rule?.name];
  };

  it("at the door: a public edge reaches a public room's path, not a private or an unread one's", () => {
    expect(door("pub", "1451951375079000001")).toEqual([
      "allow",
      "connection:discord:class-public",
    ]);
    for (const id of ["1451951375079000002", "1451951375079000003"])
      expect(door("pub", id)).toEqual(["deny", "connection:discord:deny-unscoped-channels"]);
    expect(door("priv", "1451951375079000002")).toEqual([
      "allow",
      "connection:discord:class-private",
    ]);
    expect(door("priv", "1451951375079000001")[0]).toBe("deny");
  });

  it("at the bot's listener: the edge hands on a room of its class, and a room made private stops", async () => {
    const loaded = config();
    const pub = listenerScope(loaded.connections, "discord", "pub");
    const priv = listenerScope(loaded.connections, "discord", "priv");
    if (!pub || !priv) throw new Error("a Discord edge narrows its listener");
    expect([pub(PUBLIC_ROOM), pub(PRIVATE_ROOM), pub(UNREAD_ROOM)]).toEqual([true, false, false]);
    expect([priv(PUBLIC_ROOM), priv(PRIVATE_ROOM), priv(UNREAD_ROOM)]).toEqual([
      false,
      true,
      false,
    ]);
    await recordClass(rosterPaths(), PUBLIC_ROOM, "private");
    expect(recordedClass(PUBLIC_ROOM)).toBe("private");
    expect(pub(PUBLIC_ROOM)).toBe(false);
    await recordClass(rosterPaths(), PUBLIC_ROOM, "public");
  });

  it("on a grant's channels: public, private and one channel's id, judged by the run's origins", () => {
    expect(classAdmits({ surfaces: ["public"] }, [PUBLIC_ROOM])).toBe(true);
    expect(classAdmits({ surfaces: ["public"] }, [PRIVATE_ROOM])).toBe(false);
    expect(classAdmits({ surfaces: ["private"] }, [UNREAD_ROOM])).toBe(false);
    expect(classAdmits({ surfaces: ["public", "dm"] }, [PUBLIC_ROOM, "discord-dm-42"])).toBe(true);
    expect(classAdmits({ surfaces: ["1451951375079000003"] }, [UNREAD_ROOM])).toBe(true);
    expect(classAdmits({ surfaces: [PRIVATE_ROOM] }, [PRIVATE_ROOM])).toBe(true);
    expect(classAdmits({ surfaces: [PRIVATE_ROOM] }, [PUBLIC_ROOM])).toBe(false);
  });
});
