import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendMessage, ensureChannel } from "../../runner/records/channels/store.ts";
import { readRecord, runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/** `roster channel …` as an operator uses it: what they see, and what the next send would do. */
let deployment: RosterRoot;
beforeAll(async () => {
  // these commands never reach the model; the address only has to be well formed
  deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
  const { paths } = deployment;
  appendMessage(paths, "term-alice-elf", {
    ts: "2026-07-10T09:00:00.000Z",
    author_id: "user:alice",
    author: "alice",
    role: "user",
    content: "is the deploy\ndone?",
    attachments: [],
  });
  appendMessage(paths, "term-alice-elf", {
    ts: "2026-07-10T09:01:30.000Z",
    author_id: "worker:elf",
    author: "elf",
    role: "worker",
    content: "yes, at 09:01",
    attachments: [],
  });
  ensureChannel(paths, "discord-1-general");
  await writeFile(join(paths.data, "channels/discord-1-general/purpose.md"), "Release chatter.\n");
});
afterAll(async () => {
  await deployment?.cleanup();
});

const roster = (...args: string[]) => deployment.roster(["channel", ...args]);

describe("roster channel", () => {
  it("ls shows each channel's trust, wake mode and activity, saying which are defaults", async () => {
    const listed = await roster("ls");
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+TRUSTED\s+MODE\s+LINKED\s+MESSAGES\s+LAST$/);
    expect(lines[1]).toMatch(
      /^discord-1-general\s+no \(default\)\s+mention \(default\)\s+-\s+0\s+-$/,
    );
    expect(lines[2]).toMatch(
      /^term-alice-elf\s+yes \(default\)\s+all \(default\)\s+-\s+2\s+2026-07-10 09:01$/,
    );

    const json = await roster("ls", "--json");
    const rows = json.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(rows).toContainEqual({
      id: "term-alice-elf",
      trusted: true,
      trusted_by: "default",
      mode: "all",
      mode_by: "default",
      linked: null,
      messages: 2,
      last_ts: "2026-07-10T09:01:30.000Z",
    });
  });

  it("show prints the designation, the purpose and the latest messages one per line", async () => {
    const shown = await roster("show", "term-alice-elf");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("trusted   yes (default)");
    expect(shown.stdout).toContain("(no purpose.md)");
    expect(shown.stdout).toContain("2026-07-10T09:00:00Z alice (user): is the deploy done?");
    expect(shown.stdout).toContain("2026-07-10T09:01:30Z elf (worker): yes, at 09:01");

    const last = await roster("show", "term-alice-elf", "--last", "1");
    expect(last.stdout).not.toContain("is the deploy");
    expect(last.stdout).toContain("yes, at 09:01");

    const room = await roster("show", "discord-1-general", "--json");
    expect(JSON.parse(room.stdout)).toMatchObject({
      id: "discord-1-general",
      trusted: false,
      mode: "mention",
      purpose: "Release chatter.\n",
      messages: [],
    });
  });

  it("trust, untrust and set mode change what ls shows and keep the settings file's other keys", async () => {
    const settings = join(deployment.paths.data, "channels/settings.json");
    await writeFile(settings, JSON.stringify({ trusted: [], note: "kept" }));
    const trusted = await roster("trust", "discord-1-general");
    expect(trusted).toMatchObject({ code: 0 });
    expect(trusted.stdout).toMatch(/discord-1-general is trusted/);
    expect((await roster("untrust", "term-alice-elf")).code).toBe(0);
    expect((await roster("set", "discord-1-general", "mode", "all")).code).toBe(0);
    // designated before anyone spoke there: listed all the same
    expect((await roster("trust", "slack-t1-ops")).code).toBe(0);

    const lines = (await roster("ls")).stdout.split("\n");
    expect(lines.find((line) => line.startsWith("discord-1-general"))).toMatch(
      /^discord-1-general\s+yes\s+all\s+-\s+0/,
    );
    expect(lines.find((line) => line.startsWith("term-alice-elf"))).toMatch(
      /^term-alice-elf\s+no\s+all \(default\)\s+-\s+2/,
    );
    expect(lines.find((line) => line.startsWith("slack-t1-ops"))).toMatch(/^slack-t1-ops\s+yes\s/);
    expect(JSON.parse(await readFile(settings, "utf8"))).toMatchObject({ note: "kept" });
  });

  it("refuses bad ids, unknown settings and unknown modes with one clear line and exit 2", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["show", "Term/../x"], /"Term\/\.\.\/x" is not a channel id: lowercase/],
      [["trust", "Room"], /"Room" is not a channel id: lowercase/],
      [
        ["set", "room", "colour", "blue"],
        /unknown setting "colour": the only one is mode \(all\|mention\)/,
      ],
      [["set", "room", "mode", "loud"], /mode must be all or mention, not "loud"/],
      [["link", "Ana", "term-alice-elf"], /"Ana" is not a channel name: lowercase/],
      [
        ["link", "discord-dm-5", "term-alice-elf", "term-bob-elf"],
        /"discord-dm-5" looks like a discord surface id .*a fresh name/,
      ],
      [["link", "bob-dm-x", "term-alice-elf"], /"bob-dm-x" looks like a direct surface's id/],
      [["link", "ana", "discord-1-general"], /discord-1-general is not a direct surface/],
      [["show", "no-such-channel"], /no channel "no-such-channel"/],
      [["show", "term-alice-elf", "--last", "many"], /--last many: a whole number/],
    ];
    for (const [args, said] of cases) {
      const result = await roster(...args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr.split("\n")[0]).toMatch(/^roster: /);
      expect(result.stderr).toMatch(said);
    }
  });

  it("a corrupt settings file trusts nothing, says so, and is never overwritten", async () => {
    const settings = join(deployment.paths.data, "channels/settings.json");
    const before = await readFile(settings, "utf8");
    await writeFile(settings, "{ broken");
    try {
      const listed = await roster("ls");
      expect(listed.code).toBe(0);
      expect(listed.stderr).toMatch(/settings\.json can't be read .*no channel is trusted/);
      expect(listed.stdout).not.toMatch(/\byes\b/);
      const refused = await roster("trust", "discord-1-general");
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(settings);
      expect(await readFile(settings, "utf8")).toBe("{ broken");
    } finally {
      await writeFile(settings, before);
    }
  });
});

describe("roster channel link: one named channel of a person's direct surfaces", () => {
  const DM = "discord-dm-830000000000000009";
  const TERM = "term-carol-elf";
  const linksFile = () => join(deployment.paths.data, "channels/links.json");
  const history = async (id: string) =>
    (await readFile(join(deployment.paths.data, "channels", id, "messages.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { content: string; surface?: string });

  beforeAll(async () => {
    const { paths } = deployment;
    const said = (id: string, ts: string, content: string) =>
      appendMessage(paths, id, {
        ts,
        author_id: "user:carol",
        author: "carol",
        role: "user",
        content,
        attachments: [],
      });
    said(TERM, "2026-07-11T09:00:00.000Z", "first, at the terminal");
    said(DM, "2026-07-11T09:05:00.000Z", "then in the DM");
    said(TERM, "2026-07-11T09:10:00.000Z", "back at the terminal");
    await writeFile(join(paths.data, "channels", DM, "purpose.md"), "Carol's errands.\n");
  });

  it("link <name> <surfaces…> makes one channel: histories interleave by send time, the purpose comes along", async () => {
    const linked = await roster("link", "carol", TERM, DM);
    expect(linked.code, linked.stderr).toBe(0);
    expect(linked.stdout).toBe(
      `linked: carol is one channel of ${TERM} + ${DM} (one history, purpose and store; trusted only while every member is)\n`,
    );
    expect((await history("carol")).map((m) => [m.content, m.surface])).toEqual([
      ["first, at the terminal", TERM],
      ["then in the DM", DM],
      ["back at the terminal", TERM],
    ]);
    expect(await readFile(join(deployment.paths.data, "channels/carol/purpose.md"), "utf8")).toBe(
      "Carol's errands.\n",
    );
    // a surface already in another channel is refused, naming it
    const again = await roster("link", "someone", DM);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(new RegExp(`${DM} is linked with carol already; unlink it first`));
  });

  it("ls and show name the linked channel and its members; its trust is shared", async () => {
    const lines = (await roster("ls")).stdout.split("\n");
    expect(lines.find((line) => line.startsWith("carol "))).toMatch(
      new RegExp(`^carol\\s+yes \\(linked: shared\\)\\s+\\S+.*\\s+${TERM}, ${DM}\\s+3\\s`),
    );
    expect(lines.find((line) => line.startsWith(DM))).toMatch(/\sin carol\s/);
    const rows = (await roster("ls", "--json")).stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id: string; linked: unknown });
    expect(rows.find((row) => row.id === "carol")?.linked).toEqual({
      name: "carol",
      surfaces: [TERM, DM],
    });
    const shown = await roster("show", "carol");
    expect(shown.stdout).toContain(`linked    carol is one channel of ${TERM} + ${DM}`);
    expect(shown.stdout).toContain("then in the DM");

    // one member untrusted: the whole channel is, and the name says so
    expect((await roster("untrust", DM)).stdout).toContain("whose trust is shared");
    expect((await roster("show", "carol", "--json")).stdout).toMatch(/"trusted": false/);
    const trusted = await roster("trust", "carol");
    expect(trusted.stdout).toBe(
      `carol (${TERM} + ${DM}) is trusted: its own runs' sends and purpose edits there run without a gate\n`,
    );
    expect(JSON.parse((await roster("show", DM, "--json")).stdout)).toMatchObject({
      trusted: true,
      linked: { name: "carol" },
    });
  });

  it("rm refuses a linked channel; unlink leaves the channel with the others and the surface starts afresh", async () => {
    for (const id of ["carol", DM]) {
      const refused = await roster("rm", id, "--yes");
      expect(refused.code, id).toBe(2);
      expect(refused.stderr).toMatch(/nothing was moved/);
    }
    const unlinked = await roster("unlink", DM);
    expect(unlinked.stdout).toBe(
      `${DM} left carol and starts a fresh conversation (the channel's history stays with carol)\n`,
    );
    expect(JSON.parse((await roster("show", DM, "--json")).stdout)).toMatchObject({
      linked: null,
      messages: [],
    });
    expect((await roster("show", "carol")).stdout).toContain(`carol is one channel of ${TERM}\n`);
    expect(await history("carol")).toHaveLength(3);
  });

  it("the two-surface form still links without a name; links.json as the public roster writes it reads", async () => {
    const older = await roster("link", "term-dan-elf", "discord-dm-830000000000000010", "--json");
    expect(older.code, older.stderr).toBe(0);
    expect(JSON.parse(older.stdout)).toMatchObject({
      surfaces: ["term-dan-elf", "discord-dm-830000000000000010"],
    });
    expect(JSON.parse(older.stdout).name).toBeUndefined();

    await writeFile(linksFile(), JSON.stringify({ channels: { dora: ["term-dora-elf"] } }));
    expect((await roster("show", "dora")).stdout).toContain(
      "linked    dora is one channel of term-dora-elf",
    );
    expect((await roster("link", "dora", "discord-dm-830000000000000011")).code).toBe(0);
    expect(JSON.parse(await readFile(linksFile(), "utf8"))).toMatchObject({
      groups: [{ name: "dora", surfaces: ["term-dora-elf", "discord-dm-830000000000000011"] }],
    });
  });

  it("set with no key lists the keys it takes, with their values and meaning", async () => {
    const listed = await roster("set", TERM);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^KEY\s+VALUE\s+VALUES\s+MEANING$/m);
    expect(listed.stdout).toMatch(/^mode\s+all \(default\)\s+all\|mention\s+which messages wake/m);
    const json = JSON.parse((await roster("set", TERM, "--json")).stdout);
    expect(json).toEqual({
      id: TERM,
      keys: [
        {
          key: "mode",
          value: "all",
          set_by: "default",
          values: "all|mention",
          meaning: "which messages wake the worker: every one, or only those that mention it",
        },
      ],
    });
  });
});

describe("roster channel rm", () => {
  const id = "discord-1-old";
  const sessionDir = () => runDir(deployment.paths.state, "elf", "2026-07-10-09-00-00-000aaaaaaaa");

  beforeAll(async () => {
    const { paths } = deployment;
    appendMessage(paths, id, {
      ts: "2026-07-10T09:00:00.000Z",
      author_id: "user:bob",
      author: "bob",
      role: "user",
      content: "old news",
      attachments: [],
    });
    await writeFile(join(paths.data, "channels", id, "purpose.md"), "Old things.\n");
    expect((await roster("trust", id)).code).toBe(0);
    expect((await roster("set", id, "mode", "all")).code).toBe(0);
  });

  it("asks first, and without a terminal to ask on changes nothing", async () => {
    const refused = await roster("rm", id);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not in a terminal, so nothing was asked .*add --yes/);
    expect(existsSync(join(deployment.paths.data, "channels", id, "messages.jsonl"))).toBe(true);
  });

  it("is refused while a session runs in the channel, naming it", async () => {
    await writeRecord(sessionDir(), {
      id: "2026-07-10-09-00-00-000aaaaaaaa",
      worker: "elf",
      kind: "session",
      state: "running",
      started_at: "2026-07-10T09:00:00.000Z",
      channel_id: id,
      runner_pid: process.pid,
    });
    const refused = await roster("rm", id, "--yes");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /discord-1-old has a session going: 2026-07-10-09-00-00-000aaaaaaaa \(session of elf\); .*nothing was moved/,
    );
    expect(existsSync(join(deployment.paths.data, "channels", id))).toBe(true);
  });

  it("moves its folder to the archive, forgets its trust and mode, and lists it no more", async () => {
    const { paths } = deployment;
    const record = readRecord(sessionDir());
    if (!record) throw new Error("the session's record is gone");
    await writeRecord(sessionDir(), { ...record, state: "done", ended_by: "idle" });
    const removed = await roster("rm", id, "--yes", "--json");
    expect(removed.code, removed.stderr).toBe(0);
    const said = JSON.parse(removed.stdout) as { archive: string; forgot: boolean };
    expect(said.forgot).toBe(true);
    expect(said.archive).toMatch(/\/archive\/channel-discord-1-old-\d{8}-\d{6}$/);
    // nothing deleted: the history and purpose are in the archive
    expect(await readFile(join(said.archive, "messages.jsonl"), "utf8")).toContain("old news");
    expect(await readFile(join(said.archive, "purpose.md"), "utf8")).toBe("Old things.\n");
    expect(existsSync(join(paths.data, "channels", id))).toBe(false);
    expect((await roster("ls")).stdout).not.toContain(id);
    const settings = await readFile(join(paths.data, "channels/settings.json"), "utf8");
    expect(settings).not.toContain(id);
    // made again later, it starts at the defaults
    expect((await roster("show", id)).code).toBe(2);
    const again = await roster("rm", id, "--yes");
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/no channel "discord-1-old"/);
  });
});
