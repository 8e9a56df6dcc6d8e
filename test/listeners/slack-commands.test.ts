import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { pauseOf } from "../../runner/records/workers/pause.ts";
import { bindElf, lazyServer, until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * Slack slash commands under `roster server`: Slack's Socket Mode envelope
 * (slash_commands) through the listener to the host's command core and back
 * on the ack, judged by org.toml [chat] and, where it says so, by Slack's
 * own word that someone is an admin of the workspace it names; a command
 * from anyone of another workspace is refused.
 */
const docker = await testDocker();

const BOT_TOKEN = "xoxb-commands-test";
const APP_TOKEN = "xapp-commands-test";
const ROOM = "C0CMDROOM";
const ADMIN = "U0ADMIN01";
const APPROVER = "U0APPROV1";
const BOSS = "U0BOSS001";
const STRANGER = "U0STRANG1";
/** A Slack Connect guest: an admin of a workspace of their own. */
const GUEST = "U0GUEST01";
const NOSY = "U0NOSY001";
const ROOM_ID = `slack-t0roster-${ROOM.toLowerCase()}`;

describe.skipIf(!docker)("Slack slash commands", () => {
  let model: ModelServer;
  let slack: SlackStandIn;
  let deployment: RosterRoot;
  const server = lazyServer(() => deployment);

  /** Runs a slash command and waits for its answer, as the person sees it. */
  const slash = async (user: string, command: string, text = "", team_id?: string) => {
    const { trigger_id } = slack.slash({
      command,
      text,
      user,
      channel: ROOM,
      ...(team_id ? { team_id } : {}),
    });
    return until(
      () => slack.slashResponses.find((response) => response.trigger_id === trigger_id),
      `the answer to ${command} ${text}`,
      20_000,
    );
  };
  const journal = () =>
    readFileSync(join(deployment.paths.audit, "decisions.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => String(line.intent).startsWith("command "));

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    slack = await SlackStandIn.start({
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      channels: [ROOM],
      users: [ADMIN, APPROVER, BOSS, STRANGER, GUEST, NOSY],
    });
    slack.setUser(BOSS, { name: "boss", is_admin: true });
    slack.setUser(GUEST, { name: "guest", is_admin: true, team_id: "T0OTHERS" });
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SLACK-COMMANDS-KEY",
      extraOrg: `[chat]\nadmins = ["slack:${ADMIN}"]\napprovers = ["slack:${APPROVER}"]\n\n[chat.from_platform]\nslack_workspaces = ["T0ROSTER"]\nslack_workspace_admins = true\n`,
    });
    // only DMs wake elf: a room's messages are context
    await bindElf(
      deployment,
      { slack: { bot_token: BOT_TOKEN, app_token: APP_TOKEN, api_base: slack.apiBase } },
      'wake = { surfaces = ["dm"] }\n\n',
    );
    await server.start();
  });
  afterAll(async () => {
    await server.stop();
    await slack?.stop();
    await model?.stop();
    await deployment?.cleanup();
  });

  it("an admin files a recurring task; the answer is the asker's alone and says what was filed", async () => {
    const answer = await slash(ADMIN, "/task", 'add "write the weekly report" --every 7d');
    expect(answer).toMatchObject({ via: "ack", response_type: "ephemeral", user: ADMIN });
    expect(answer.text).toMatch(/^r-[0-9a-f]+ for elf: every 7d, next /);
    const template = readTasks(deployment.paths, "elf").recurring?.find((one) => !one.system);
    expect(template).toMatchObject({ prompt: "write the weekly report", every: "7d" });
    expect(slack.history(ROOM).map((message) => message.text)).not.toContain(answer.text);
    expect((await slash(APPROVER, "/roster", "task ls")).text).toContain("write the weekly report");
  });

  it("reads the run records: the last runs, and one run's outcome", async () => {
    const id = "2026-12-05-09-00-00-000cccccccc";
    await writeRecord(runDir(deployment.paths.state, "elf", id), {
      id,
      worker: "elf",
      kind: "task",
      state: "done",
      started_at: "2026-12-05T09:00:00.000Z",
      ended_at: "2026-12-05T09:03:00.000Z",
      ended_by: "exit",
      exit_code: 0,
    });
    expect((await slash(APPROVER, "/runs")).text).toContain(id);
    const shown = await slash(APPROVER, "/runs", "show 2026-12-05-09");
    expect(shown).toMatchObject({ response_type: "ephemeral", user: APPROVER });
    expect(shown.text).toContain(`run       ${id}`);
  });

  it("someone without standing is refused by the rule, and the journal says who asked from where", async () => {
    const answer = await slash(STRANGER, "/approvals");
    expect(answer.text).toBe(
      `Not done: /approvals ls this needs an approver or an admin: slack:${STRANGER} is in neither org.toml [chat] admins nor [chat] approvers, and [chat.from_platform] vouches for nothing they have.`,
    );
    expect(journal().at(-1)).toMatchObject({
      intent: "command /approvals ls",
      disposition: "refused",
      decided_by: `slack:${STRANGER}`,
    });
    expect(String(journal().at(-1)?.reason)).toMatch(new RegExp(`^from ${ROOM_ID}: `));
    const approver = await slash(APPROVER, "/worker", "pause elf");
    expect(approver.text).toMatch(/^Not done: \/worker pause this needs an admin/);
    expect(pauseOf(deployment.paths, "elf")).toBeUndefined();
  });

  it("a workspace admin is an admin because org.toml says Slack's word counts", async () => {
    const paused = await slash(BOSS, "/worker", "pause elf quiet week");
    expect(paused.text).toMatch(/^elf is paused \(by slack:U0BOSS001 at .*: quiet week\)/);
    expect(pauseOf(deployment.paths, "elf")?.by).toBe(`slack:${BOSS}`);
    expect((await slash(BOSS, "/worker", "resume elf")).text).toBe("elf may run again");
  });

  it("says in the server's log whose commands are taken and where Slack's word counts", async () => {
    await until(
      () =>
        server
          .log()
          .includes(
            "commands are taken only from people of workspace T0ROSTER; Slack's word on a person (workspace admin) counts there",
          ),
      "the listener's line on whose commands are taken",
    );
  });

  it("a command from another workspace is refused unjudged, even from that workspace's admin", async () => {
    const guest = await slash(GUEST, "/worker", "pause elf");
    expect(guest.text).toBe(
      "Not done: this bot takes commands only from people of its own workspace (T0ROSTER), and T0OTHERS is another.",
    );
    expect(pauseOf(deployment.paths, "elf")).toBeUndefined();
    // run in another workspace (a sibling of an org-wide install), even an admin's is refused
    const elsewhere = await slash(ADMIN, "/task", "ls", "T0SIBLING");
    expect(elsewhere.text).toBe(
      "Not done: this bot takes commands only from people of its own workspace (T0ROSTER), and T0SIBLING is another.",
    );
  });

  it("a refusal's journal line keeps a short excerpt of the command, at most 5 a minute per asker", async () => {
    const long = "x".repeat(6_000);
    for (let i = 0; i < 7; i++)
      expect((await slash(NOSY, "/task", `add "${long}"`)).text).toMatch(
        /^Not done: \/task add this needs an admin/,
      );
    const lines = journal().filter((line) => line.decided_by === `slack:${NOSY}`);
    expect(lines).toHaveLength(5);
    for (const line of lines) {
      expect(line.disposition).toBe("refused");
      expect(JSON.stringify(line.result).length).toBeLessThan(300);
    }
  });

  it("a room outside the worker's wake class is kept as context and wakes nothing", async () => {
    slack.post({ channel: ROOM, user: ADMIN, text: `<@${slack.botUserId}> are you there?` });
    const history = join(deployment.paths.data, "channels", ROOM_ID, "messages.jsonl");
    await until(
      () => existsSync(history) && readFileSync(history, "utf8").includes("are you there?"),
      "the message in the room's history",
    );
    expect(model.requests).toHaveLength(0);
  });

  it("a change to the channel itself is said to the room", async () => {
    const answer = await slash(ADMIN, "/channel", "trust");
    expect(answer).toMatchObject({ response_type: "in_channel" });
    expect(answer.text).toMatch(/is trusted.*\(by slack:U0ADMIN01\)/);
    await until(
      () => slack.history(ROOM).find((message) => message.text === answer.text),
      "the answer in the room",
    );
    const shown = await slash(APPROVER, "/channel");
    expect(shown.text).toMatch(/^trusted {3}yes$/m);
  });
});
