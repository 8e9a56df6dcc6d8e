import { readFileSync } from "node:fs";
import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRoots } from "../../runner/cli/does/init.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import {
  designationOf,
  readDesignations,
  setTrusted,
} from "../../runner/records/channels/designations.ts";
import { homeOf } from "../../runner/records/channels/links.ts";
import { ensureChannel, readPurpose } from "../../runner/records/channels/store.ts";
import { listGates } from "../../runner/records/gates/gate-record.ts";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { assertNotPaused, pauseOf } from "../../runner/records/workers/pause.ts";
import { readyTasks } from "../../runner/services/server/ready-tasks.ts";
import type { Asker } from "../../runner/services/slash/authority.ts";
import { answerLine } from "../../runner/services/slash/core.ts";
import { terminalCommand } from "../../runner/services/slash/terminal.ts";

/**
 * The host's command core: what a person types after "/" in `roster talk`,
 * and what Discord and Slack hand over as commands, answered from the
 * records on the host, judged by the asker's standing, journalled, and never
 * passed to the worker.
 */
let root: string;
let paths: RosterPaths;
const ELF_RUN = "2026-07-10-09-00-00-000aaaaaaaa";
const IMP_RUN = "2026-07-10-10-00-00-000bbbbbbbb";
const GUILD = "810000000000000001";
const ROOM = `discord-${GUILD}-820000000000000001`;
const ADMIN = "discord:830000000000000001";
const APPROVER = "discord:830000000000000002";
const STRANGER = "discord:830000000000000003";

const term = (line: string, channel = "term-ann-elf") =>
  terminalCommand(paths, "elf", line, "ann", channel);
const ask = async (asker: Asker | string, line: string, channel: string | undefined = ROOM) =>
  (
    await answerLine(
      {
        paths,
        worker: "elf",
        channel,
        asker: typeof asker === "string" ? { user: asker } : asker,
      },
      line,
    )
  ).text;
const journal = () =>
  readFileSync(join(paths.audit, "decisions.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => String(line.intent).startsWith("command "));

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "roster-commands-"));
  paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  await appendFile(
    join(paths.config, "org.toml"),
    `\n[chat]\nadmins = ["${ADMIN}"]\napprovers = ["${APPROVER}"]\n\n[chat.from_platform]\ndiscord_guilds = ["${GUILD}"]\nslack_workspaces = ["T0ROSTER"]\ndiscord_roles = ["840000000000000001"]\ndiscord_manage_server = true\nslack_workspace_admins = true\n`,
  );
  await writeRecord(runDir(paths.state, "elf", ELF_RUN), {
    id: ELF_RUN,
    worker: "elf",
    kind: "task",
    state: "done",
    started_at: "2026-07-10T09:00:00.000Z",
    ended_at: "2026-07-10T09:02:00.000Z",
    ended_by: "exit",
    exit_code: 0,
    task_id: "t-tidy",
  });
  await writeRecord(runDir(paths.state, "imp", IMP_RUN), {
    id: IMP_RUN,
    worker: "imp",
    kind: "box",
    state: "failed",
    started_at: "2026-07-10T10:00:00.000Z",
    ended_by: "ceiling",
  });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("commands at the terminal (the operator)", () => {
  it("/runs lists this worker's last runs and no other worker's", async () => {
    const answer = await term("/runs");
    expect(answer).toContain(ELF_RUN);
    expect(answer).not.toContain(IMP_RUN);
    // what kind of run, and for which task or channel
    expect(answer).toMatch(/RUN\s+WORKER\s+KIND\s+STATE\s+ENDED BY\s+STARTED \(UTC\)\s+FOR/);
    expect(answer).toMatch(new RegExp(`${ELF_RUN}\\s+elf\\s+task\\s+.*\\st-tidy`));
  });

  it("/runs <id> shows one run's outcome by any unique prefix, only of this worker", async () => {
    const shown = await term("/runs 2026-07-10-09");
    expect(shown).toContain(`run       ${ELF_RUN}`);
    expect(shown).toMatch(/done/);
    expect(await term(`/runs show ${IMP_RUN}`)).toBe(`${IMP_RUN} is a run of imp, not of elf`);
    expect(await term("/runs 1999")).toBe('no run matches "1999"');
  });

  it("/help lists every command, /quit ends, an unknown one says how to reach the worker", async () => {
    const help = await term("/help");
    for (const command of ["/approvals approve <id>", "/task add <prompt…>", "/worker pause"])
      expect(help).toContain(command);
    expect(help).not.toContain("(not for you)");
    expect(await term("/quit")).toBe("quit");
    expect(await term("/bogus")).toMatch(/^unknown command \/bogus.*start it with a space/);
    expect(await term("/approve")).toMatch(/^id is missing; usage: \/approvals approve <id>/);
  });

  it("/channel shows this channel's standing and purpose, and trust, untrust and mode change it", async () => {
    const id = "term-ann-elf";
    ensureChannel(paths, id);
    await writeFile(join(paths.data, "channels", id, "purpose.md"), "Ann's desk.\nMore.\n");
    const shown = await term("/channel");
    expect(shown).toMatch(/^channel {3}term-ann-elf$/m);
    expect(shown).toMatch(/^trusted {3}yes \(default\)$/m);
    expect(shown).toMatch(/^purpose {3}Ann's desk\.$/m);
    expect(await term("/channel untrust")).toMatch(/is untrusted/);
    expect(await term("/channel mode mention")).toMatch(/only messages that mention/);
    const after = designationOf(readDesignations(paths), id);
    expect(after).toMatchObject({ trusted: false, trustedBy: "operator", mode: "mention" });
    expect(await term("/channel mode loud")).toBe('mode: all or mention, not "loud"');
  });
});

describe("who may run what, from chat", () => {
  it("someone in neither list is refused every command but /help and /identity, by the rule", async () => {
    expect(await ask(STRANGER, "/approvals")).toBe(
      `Not done: /approvals ls this needs an approver or an admin: ${STRANGER} is in neither org.toml [chat] admins nor [chat] approvers, and [chat.from_platform] vouches for nothing they have.`,
    );
    expect(await ask(STRANGER, "/help")).toMatch(/\/task add .*\(not for you\)/);
    expect(await ask(STRANGER, "/identity")).toMatch(
      /^you: discord:830000000000000003, no standing/m,
    );
  });

  it("an approver reads and decides but changes nothing; an admin changes", async () => {
    expect(await ask(APPROVER, "/approvals")).toBe("nothing waits for you");
    expect(await ask(APPROVER, "/task add write it")).toMatch(
      /^Not done: \/task add this needs an admin: you are an approver by org\.toml \[chat\] approvers\.$/,
    );
    expect(readTasks(paths, "elf").tasks).toHaveLength(0);
    expect(await ask(ADMIN, '/task add "write the report" --every 1d')).toMatch(
      /^r-[0-9a-f]+ for elf: every 1d/,
    );
    expect(await ask(ADMIN, "/task add tidy the notes")).toMatch(/^t-[0-9a-f]+ pending for elf/);
    const tasks = readTasks(paths, "elf");
    expect(tasks.tasks[0]).toMatchObject({ prompt: "tidy the notes", filed_by: ADMIN });
    expect(tasks.recurring?.find((one) => !one.system)?.prompt).toBe("write the report");
    expect(await ask(APPROVER, "/task")).toContain("tidy the notes");
  });

  it("a platform's word counts only where [chat.from_platform] says so, in a guild or workspace it names", async () => {
    const role = { user: STRANGER, platform: { server: GUILD, roles: ["840000000000000001"] } };
    expect(await ask(role, "/identity")).toMatch(
      /admin by org\.toml \[chat\.from_platform\] discord_roles \(you hold role 840000000000000001\)/,
    );
    const manager = { user: STRANGER, platform: { server: GUILD, manageServer: true } };
    expect(await ask(manager, "/channel trust")).toMatch(
      /is trusted.*by discord:830000000000000003/,
    );
    const slackAdmin = {
      user: "slack:U0ADMIN",
      platform: { server: "t0roster", workspaceAdmin: true },
    };
    expect(await ask(slackAdmin, "/worker")).toMatch(/^elf/m);
    // Manage Server in a guild of their own, or a workspace not named, vouches for nothing
    const ownGuild = {
      user: STRANGER,
      platform: { server: "810000000000000099", manageServer: true },
    };
    expect(await ask(ownGuild, "/worker pause elf")).toBe(
      `Not done: /worker pause this needs an admin: ${STRANGER} is in neither org.toml [chat] admins nor [chat] approvers, and [chat.from_platform] does not name 810000000000000099 (its word counts only in the guilds and workspaces named there).`,
    );
    expect(
      await ask(
        { user: "slack:U0OTHER", platform: { server: "T0OTHER", workspaceAdmin: true } },
        "/worker",
      ),
    ).toMatch(/^Not done/);
    // a Slack admin flag on a Discord user, or a role not listed, vouches for nothing
    expect(await ask({ user: STRANGER, platform: { workspaceAdmin: true } }, "/worker")).toMatch(
      /^Not done/,
    );
    expect(await ask({ user: STRANGER, platform: { roles: ["1"] } }, "/worker")).toMatch(
      /^Not done/,
    );
  });

  it("every command is a journal line: who, from where, how it ended", async () => {
    await ask(STRANGER, "/runs");
    await ask(ADMIN, "/runs");
    const lines = journal().slice(-2);
    expect(lines[0]).toMatchObject({
      kind: "action",
      worker: "org/elf",
      intent: "command /runs ls",
      disposition: "refused",
      decided_by: STRANGER,
    });
    expect(String(lines[0]?.reason)).toMatch(new RegExp(`^from ${ROOM}: this needs an approver`));
    expect(lines[1]).toMatchObject({
      disposition: "executed",
      decided_by: ADMIN,
      reason: `from ${ROOM}`,
    });
  });
});

describe("what the commands change", () => {
  it("/worker pause stops every new box of the worker until /worker resume", async () => {
    expect(await ask(ADMIN, "/worker pause elf the budget is spent")).toMatch(
      /^elf is paused \(by discord:830000000000000001 at .*: the budget is spent\)/,
    );
    expect(pauseOf(paths, "elf")?.by).toBe(ADMIN);
    expect(() => assertNotPaused(paths, "elf")).toThrow(/roster worker resume elf/);
    // its filed tasks wait, neither started nor blocked
    const config = loadConfig(paths.config);
    expect(await readyTasks(paths, config, new Date())).toEqual([]);
    expect(await ask(APPROVER, "/worker")).toMatch(/paused by discord:830000000000000001/);
    expect(await ask(ADMIN, "/worker resume elf")).toBe("elf may run again");
    expect(() => assertNotPaused(paths, "elf")).not.toThrow();
    expect((await readyTasks(paths, config, new Date())).map((one) => one.task.prompt)).toContain(
      "tidy the notes",
    );
    expect(await ask(ADMIN, "/worker pause ghost")).toBe('no worker named "ghost"');
  });

  it("/channel link joins only surfaces the asker is the person in (the terminal any); a room is refused", async () => {
    const dm = "discord-dm-830000000000000001";
    const other = "slack-t0roster-dm-u0admin";
    expect(await ask(APPROVER, `/channel link ${other}`, dm)).toMatch(
      /^Not done: .* needs an admin/,
    );
    // from chat, only a surface the asker is the person in: this Slack DM may be anyone's
    expect(await ask(ADMIN, `/channel link ${other}`, dm)).toBe(
      `Not done: /channel link ${other} is not yours: from chat only surfaces you are the person in link (the operator links others at the terminal, roster channel link).`,
    );
    expect(homeOf(paths, other)).toBe(other);
    // the operator at the terminal decides: their terminal and the DM become one
    const mine = "term-ann-elf";
    expect(await term(`/channel link ${other}`)).toBe(
      `linked: ${mine} + ${other} are one conversation (its history is ${mine}'s); each keeps its own trust`,
    );
    expect(homeOf(paths, other)).toBe(mine);
    expect(await ask(ADMIN, "/channel", other)).toMatch(new RegExp(`^linked {4}${mine}$`, "m"));
    expect(await ask(ADMIN, `/channel link ${other}`)).toMatch(/is not a direct surface/);
    expect(await ask(ADMIN, "/channel unlink", other)).toMatch(/is its own conversation again/);
    expect(homeOf(paths, other)).toBe(other);
  });

  it("/purpose edit writes at once in a trusted channel and waits for approval elsewhere", async () => {
    const trusted = "discord-810000000000000001-820000000000000002";
    await setTrusted(paths, trusted, true);
    expect(await ask(APPROVER, "/purpose edit Release notes, weekly.", trusted)).toMatch(
      /^the purpose of .* is now: Release notes, weekly\./,
    );
    expect(readPurpose(paths, trusted)?.trim()).toBe("Release notes, weekly.");
    const untrusted = "discord-810000000000000001-820000000000000003";
    const said = await ask(APPROVER, "/purpose edit Anything goes here.", untrusted);
    expect(said).toMatch(/is not trusted, so the new purpose waits for approval as g-/);
    expect(readPurpose(paths, untrusted)).toBeUndefined();
    const gate = listGates(paths, "elf").find((one) => one.state === "pending");
    expect(gate).toMatchObject({ executor: "purpose", payload: { channel_id: untrusted } });
    expect(await ask(APPROVER, `/approvals approve ${gate?.id ?? "?"}`)).toMatch(
      /approved and executed/,
    );
    expect(readPurpose(paths, untrusted)?.trim()).toBe("Anything goes here.");
  });
});
