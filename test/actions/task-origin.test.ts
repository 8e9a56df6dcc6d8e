import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendMessage } from "../../runner/records/channels/store.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { listGates } from "../../runner/services/actions/gates.ts";
import { replyFromTask } from "../../runner/services/actions/task-reply.ts";
import { fireTemplates } from "../../runner/work/tasks/templates.ts";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * A task filed by a chat session carries its channel and replies there
 * (reply_to), through the action host's own grants and trust: a trusted
 * channel gets the answer, an untrusted one a gate.
 */
let env: GatewayEnv;
const CHANNEL = "term-ann-elf";

const sessionRun = async (id: string, channel: string) =>
  writeRecord(runDir(env.paths.state, "elf", id), {
    id,
    worker: "elf",
    kind: "session",
    state: "running",
    started_at: new Date().toISOString(),
    channel_id: channel,
  });
const taskById = (id: unknown) => readTasks(env.paths, "elf").tasks.find((task) => task.id === id);
const history = (channel: string) =>
  readFileSync(join(env.paths.data, "channels", channel, "messages.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

beforeAll(async () => {
  env = await startGatewayEnv(
    [
      '[[action]]\nname = "file-task"\nexecutor = "task"\ntrust = "auto"\n',
      '[[action]]\nname = "set-tasks"\nexecutor = "task-list"\ntrust = "auto"\n',
      '[[action]]\nname = "term-send"\nexecutor = "term"\nworkers = ["elf"]\n',
    ].join("\n"),
  );
  for (const worker of ["elf", "imp"]) {
    await mkdir(join(env.paths.config, "workers", worker), { recursive: true });
    await writeFile(
      join(env.paths.config, "workers", worker, "worker.toml"),
      `name = "${worker}"\n`,
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 600));
});
afterAll(async () => {
  await env?.cleanup();
});

describe("tasks filed from a chat session", () => {
  it("carry the session's channel and reply there by default; reply_to false keeps the answer home", async () => {
    await sessionRun("run-chat", CHANNEL);
    const token = await env.token("elf", "run-chat");
    const filed = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Find the flaky test" },
    });
    expect(filed.status).toBe(200);
    const task = taskById((filed.body.result as { task_id: string }).task_id);
    expect(task).toMatchObject({ channel: CHANNEL, reply_to: true, standing: "owner" });

    const quiet = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Tidy the notes", reply_to: false },
    });
    expect(taskById((quiet.body.result as { task_id: string }).task_id)).toMatchObject({
      channel: CHANNEL,
      reply_to: false,
    });

    // set_tasks keeps where a kept task came from, and files new ones from this session
    const list = readTasks(env.paths, "elf");
    const set = await submitAction(env, token, {
      intent: "set-tasks",
      payload: {
        base_version: list.version,
        tasks: [
          { id: task?.id, prompt: "Find the flaky test, then fix it" },
          { prompt: "New one" },
        ],
      },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const after = readTasks(env.paths, "elf").tasks.filter((one) => one.state === "pending");
    expect(after.map((one) => [one.prompt, one.channel, one.reply_to])).toEqual([
      ["Find the flaky test, then fix it", CHANNEL, true],
      ["New one", CHANNEL, true],
    ]);
  });

  it("a recurring template filed from a chat session keeps its channel: each task it fires comes from there", async () => {
    await sessionRun("run-template", CHANNEL);
    const list = readTasks(env.paths, "elf");
    const set = await submitAction(env, await env.token("elf", "run-template"), {
      intent: "set-tasks",
      payload: {
        base_version: list.version,
        tasks: list.tasks
          .filter((one) => one.state === "pending")
          .map((one) => ({ id: one.id, prompt: one.prompt })),
        recurring: [{ prompt: "Summarise the week", every: "1d" }],
      },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const after = readTasks(env.paths, "elf");
    const template = after.recurring?.find((one) => one.prompt === "Summarise the week");
    expect(template).toMatchObject({ channel: CHANNEL, context_channels: [CHANNEL] });

    // its fire: a task from that channel, judged and clean-roomed as one filed there
    const fired = fireTemplates(after, new Date(Date.now() + 2 * 86_400_000), "UTC");
    const task = fired?.list.tasks.find((one) => one.template_id === template?.id);
    expect(task).toMatchObject({ channel: CHANNEL, context_channels: [CHANNEL], reply_to: false });
  });

  it("a participant whose display name is a common word doesn't block every task from their room; one named still does", async () => {
    const room = "discord-111111111111111-222222222222222";
    for (const [author_id, author] of [
      ["discord:333333333333333", "the"],
      ["discord:444444444444444", "Task"],
      ["discord:555555555555555", "Ann Lee"],
    ] as const)
      appendMessage(env.paths, room, {
        ts: new Date().toISOString(),
        author_id,
        author,
        role: "user",
        content: "hello",
        attachments: [],
      });
    await sessionRun("run-room", room);
    const token = await env.token("elf", "run-room");
    const filed = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Summarise the thread as a task for the morning", reply_to: false },
    });
    expect(filed.status, JSON.stringify(filed.body)).toBe(200);
    const named = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Ask Ann Lee for the numbers", reply_to: false },
    });
    expect(named.status).toBe(409);
    expect(String(named.body.error)).toMatch(/clean-room rule: it names Ann Lee/);
    // a common word is skipped as a name, never as a handle: the platform gave that one
    const byHandle = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Reply to 333333333333333 later", reply_to: false },
    });
    expect(byHandle.status).toBe(409);
  });

  it("a run that is not a chat session files tasks without a channel, and can't ask for a reply", async () => {
    const token = await env.token("elf", "run-oneshot");
    const plain = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Later" },
    });
    const task = taskById((plain.body.result as { task_id: string }).task_id);
    expect(task?.channel).toBeUndefined();
    expect(task?.reply_to).toBeUndefined();

    const refused = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Later", reply_to: true },
    });
    expect(refused.status).toBe(409);
    expect(String(refused.body.error)).toMatch(
      /^payload\.reply_to: this run is not a chat session .*no channel to reply to/,
    );
  });

  it("the answer goes through the send grant and trust: sent to a trusted channel, gated in an untrusted one", async () => {
    const sent = await replyFromTask({
      paths: env.paths,
      worker: "elf",
      task: { id: "t-0000000a", channel: CHANNEL, reply_to: true },
      runId: "run-task-a",
      answer: "The flaky test is test_login.\n",
    });
    expect(sent).toBe(`task t-0000000a: its answer was sent to ${CHANNEL}`);
    expect(history(CHANNEL).at(-1)).toMatchObject({
      author: "elf",
      role: "worker",
      content: "The flaky test is test_login.",
    });

    await mkdir(join(env.paths.data, "channels"), { recursive: true });
    await writeFile(
      join(env.paths.data, "channels/settings.json"),
      JSON.stringify({ untrusted: ["term-bob-elf"] }),
    );
    const held = await replyFromTask({
      paths: env.paths,
      worker: "elf",
      task: { id: "t-0000000b", channel: "term-bob-elf", reply_to: true },
      runId: "run-task-b",
      answer: "Done, see the diff.",
    });
    expect(held).toMatch(/^task t-0000000b: its answer to term-bob-elf is held for approval \(g-/);
    const gate = listGates(env.paths, "elf").find((one) => one.task_id === "t-0000000b");
    expect(gate).toMatchObject({
      state: "pending",
      intent: "term-send",
      run_id: "run-task-b",
      payload: { channel_id: "term-bob-elf", text: "Done, see the diff." },
    });

    // reply_to false, or no channel: nothing is proposed
    expect(
      await replyFromTask({
        paths: env.paths,
        worker: "elf",
        task: { id: "t-0000000c", channel: CHANNEL, reply_to: false },
        runId: "run-task-c",
        answer: "not sent",
      }),
    ).toBeUndefined();
    expect(history(CHANNEL).at(-1)?.content).toBe("The flaky test is test_login.");

    // asked for in the untrusted channel: the worker's own idea, proactive standing
    await sessionRun("run-untrusted", "term-bob-elf");
    const token = await env.token("elf", "run-untrusted");
    const filed = await submitAction(env, token, {
      intent: "file-task",
      payload: { prompt: "Tidy the logs" },
    });
    expect(filed.status).toBe(200);
    expect(taskById((filed.body.result as { task_id: string }).task_id)).toMatchObject({
      channel: "term-bob-elf",
      standing: "proactive",
    });
  });

  it("without a send grant for the worker nothing is sent, and its journal says why", async () => {
    const refused = await replyFromTask({
      paths: env.paths,
      worker: "imp",
      task: { id: "t-0000000d", channel: "term-ann-imp", reply_to: true },
      runId: "run-imp",
      answer: "hello",
    });
    expect(refused).toMatch(/no \[\[action\]\] grant with executor "term" for imp/);
    expect(readJournal(env.paths, "imp").at(-1)).toMatchObject({
      kind: "action-refused",
      run_id: "run-imp",
    });
  });
});
