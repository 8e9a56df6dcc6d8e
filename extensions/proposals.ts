/**
 * Proposals: how a worker does anything beyond its box — tell the user, send an
 * email, post to a channel, file a task. Each tool only proposes: the action
 * host on the host side checks the operator's grants, then runs it at once,
 * holds it for a human, or refuses; the tool says which in plain words.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";
import { gatesReport, propose, reportOutcome } from "./lib/action-words.ts";
import { guarded } from "./lib/tool-guard.ts";

/** The intents the tools submit: the operator grants them by these names (`[[action]] name`). */
export const INTENTS = {
  message_user: "message-user",
  send_email: "email-send",
  file_task: "file-task",
  set_tasks: "set-tasks",
  file_update: "file-update",
  propose_purpose_edit: "purpose-edit",
} as const;

const OUTCOMES =
  "It is a proposal: the answer says done (it ran), pending (held for a human: stop and don't repeat it), " +
  "denied (not granted: retrying won't help) or error.";

const rationale = (required: boolean) => {
  const schema = Type.String({
    minLength: 1,
    maxLength: 4000,
    description: "why this is the right thing to do now; a human approving it reads this",
  });
  return required ? schema : Type.Optional(schema);
};
const text = (what: string) => Type.String({ minLength: 1, description: what });
const channelId = Type.String({ minLength: 1, description: "the channel's id" });
const record = Type.Record(Type.String(), Type.Unknown());
const dependsOn = Type.Optional(
  Type.Array(Type.String({ pattern: "^t-[0-9a-f]{8}$" }), {
    description: "ids of tasks on your list that must be done before this one starts",
  }),
);
const template = Type.Object({
  id: Type.Optional(
    Type.String({
      description: "an existing template's id (r-…) to change it; omit for a new one",
    }),
  ),
  prompt: text("what each run of it is told: it remembers nothing of earlier runs"),
  cron: Type.Optional(
    Type.String({
      description:
        'a 5-field cron expression in the host\'s time zone, e.g. "0 9 * * 1-5" (09:00 on weekdays)',
    }),
  ),
  every: Type.Optional(Type.String({ description: 'or an interval: "30m", "6h", "1d"' })),
  window: Type.Optional(
    Type.String({ description: 'never start outside this host-local window, e.g. "09:00-17:00"' }),
  ),
  ceiling_min: Type.Optional(
    Type.Number({ description: "minutes each run may take (default 20, at most 1440)" }),
  ),
});

function loadActions(pi: ExtensionAPI): void {
  registerUserTools(pi);
  registerChannelTools(pi);
  registerFileTask(pi);
  registerSetTasks(pi);
  registerSelfTools(pi);
  // A task run reports how it ended; other runs have no task to report on.
  if (process.env.ROSTER_TASK_ID) registerOutcomeTools(pi);
  else if (process.env.ROSTER_HANDOFF) {
    // A ready box learns whether its run is a task only at hand-off, when its first
    // agent starts (engine/handoff.ts, loaded before this): the tools are there, and
    // declared to the model only in a task's run.
    registerOutcomeTools(pi);
    pi.on("before_agent_start", () => {
      if (!process.env.ROSTER_TASK_ID)
        pi.setActiveTools(pi.getActiveTools().filter((name) => !OUTCOME_TOOLS.includes(name)));
      return undefined;
    });
  }
}

const OUTCOME_TOOLS = ["task_complete", "task_fail"];

/** Telling the user, and email: messages that leave for a person rather than a channel. */
function registerUserTools(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "message_user",
    label: "Message the user",
    description: `Send a short message to your user (the operator who runs you): a result, a question, a blocker. ${OUTCOMES}`,
    parameters: Type.Object({ text: text("the message"), rationale: rationale(false) }),
    execute: (_id, params, signal) =>
      propose("message_user", INTENTS.message_user, { text: params.text }, params.rationale, {
        signal,
      }),
  });

  pi.registerTool({
    name: "send_email",
    label: "Send email",
    description: `Send a plain-text email. Usually held for a human to approve first. ${OUTCOMES}`,
    parameters: Type.Object({
      to: Type.Array(Type.String({ minLength: 3 }), {
        minItems: 1,
        maxItems: 50,
        description: 'recipients: "someone@example.com" or "Name <someone@example.com>"',
      }),
      subject: text("the subject line"),
      body: Type.String({ description: "the plain-text body, signed as you" }),
      rationale: rationale(true),
    }),
    execute: (_id, params, signal) =>
      propose(
        "send_email",
        INTENTS.send_email,
        { to: params.to, subject: params.subject, body: params.body },
        params.rationale,
        { signal },
      ),
  });
}

/**
 * Posting to a chat channel: one tool per chat platform the host speaks,
 * as the host lists them (ROSTER_CHAT_SENDS: name, intent, words, payload
 * schema, whether it takes a rationale). A list that can't be read offers
 * none; the action host judges whatever is proposed either way.
 */
function registerChannelTools(pi: ExtensionAPI): void {
  for (const send of chatSends(process.env.ROSTER_CHAT_SENDS)) {
    const payload = send.payload.properties ?? {};
    pi.registerTool({
      name: send.name,
      label: send.label,
      description: `${send.description} ${OUTCOMES}`,
      parameters: Type.Unsafe<Record<string, unknown>>({
        ...send.payload,
        properties: { ...payload, ...(send.rationale ? { rationale: rationale(false) } : {}) },
      }),
      execute: (_id, params, signal) => {
        const values = params as Record<string, unknown>;
        const why = values.rationale;
        const fields = Object.fromEntries(Object.keys(payload).map((key) => [key, values[key]]));
        return propose(send.name, send.intent, fields, typeof why === "string" ? why : undefined, {
          signal,
        });
      },
    });
  }
}

interface ChatSend {
  name: string;
  intent: string;
  label: string;
  description: string;
  payload: { properties?: Record<string, unknown> } & Record<string, unknown>;
  rationale: boolean;
}

function chatSends(json: string | undefined): ChatSend[] {
  if (!json) return [];
  try {
    const list: unknown = JSON.parse(json);
    return Array.isArray(list) ? list.filter(isChatSend) : [];
  } catch {
    return [];
  }
}

function isChatSend(value: unknown): value is ChatSend {
  const send = value as Partial<ChatSend> | null;
  return (
    typeof send?.name === "string" &&
    typeof send.intent === "string" &&
    typeof send.label === "string" &&
    typeof send.description === "string" &&
    typeof send.payload === "object" &&
    send.payload !== null
  );
}

/** Work for a later run: one task filed. */
function registerFileTask(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "file_task",
    label: "File a task",
    description: `File a task for a later run of yours: it starts with the prompt you give, now or at a set time. ${OUTCOMES}`,
    parameters: Type.Object({
      prompt: text("everything the later run needs to know: it remembers nothing of this one"),
      ceiling_min: Type.Optional(
        Type.Number({
          exclusiveMinimum: 0,
          maximum: 1440,
          description: "minutes the run may take (default 30, at most 1440)",
        }),
      ),
      at: Type.Optional(
        Type.String({
          minLength: 1,
          description: 'when to start, RFC 3339 in UTC ending in "Z", e.g. 2030-01-31T09:00:00Z',
        }),
      ),
      depends_on: dependsOn,
      reply_to: Type.Optional(
        Type.Boolean({
          description:
            "filed from a chat session: the task's final answer (its run's last message) is sent back to this channel, " +
            "with the same approval as your replies here; true by default there, false to keep it off the channel. " +
            "Only a chat session has a channel to reply to",
        }),
      ),
      rationale: rationale(false),
    }),
    execute: (_id, params, signal) =>
      propose(
        "file_task",
        INTENTS.file_task,
        {
          prompt: params.prompt,
          ceiling_min: params.ceiling_min,
          at: params.at,
          depends_on: params.depends_on,
          reply_to: params.reply_to,
        },
        params.rationale,
        { signal },
      ),
  });
}

/** The whole task list, and its recurring templates, replaced at once. */
function registerSetTasks(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "set_tasks",
    label: "Set tasks",
    description:
      "Replace your task list (see ~/self/schedule.json): give the version you read and the whole new list of pending tasks " +
      "and, to change them, the whole list of your recurring templates (each fires an ordinary task on its cron or interval; " +
      "leave one out to retire it; the host's heartbeat is not yours to list). " +
      `Claimed entries are kept as they are; a stale version is refused — read the file again. ${OUTCOMES}`,
    parameters: Type.Object({
      base_version: Type.Integer({
        minimum: 0,
        description: "the version of ~/self/schedule.json your list is based on",
      }),
      tasks: Type.Array(record, {
        description:
          "the whole list of pending tasks: each {id? (to keep one), prompt, ceiling_min?, at?, depends_on?, reply_to?}",
      }),
      recurring: Type.Optional(
        Type.Array(template, {
          description: "the whole list of your recurring templates; omit to leave them as they are",
        }),
      ),
    }),
    execute: (_id, params, signal) =>
      propose(
        "set_tasks",
        INTENTS.set_tasks,
        { base_version: params.base_version, tasks: params.tasks, recurring: params.recurring },
        undefined,
        { signal },
      ),
  });
}

/** The worker's own setup — its config and a channel's purpose — and what became of its proposals. */
function registerSelfTools(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "file_update",
    label: "Update own config",
    description:
      "Propose a new version of one of your own files under ~/self (today only config/worker.toml). " +
      `Give the sha256 of the bytes you read (sha256sum ~/self/config/worker.toml); if it changed since, it is refused. ${OUTCOMES}`,
    parameters: Type.Object({
      path: Type.String({
        minLength: 1,
        description: 'the file, relative to ~/self: "config/worker.toml"',
      }),
      base_hash: Type.String({
        minLength: 64,
        maxLength: 64,
        description: "lower-case hex sha256 of the file's current bytes",
      }),
      content: Type.String({ description: "the whole new content" }),
      rationale: rationale(true),
    }),
    execute: (_id, params, signal) =>
      propose(
        "file_update",
        INTENTS.file_update,
        { path: params.path, base_hash: params.base_hash, content: params.content },
        params.rationale,
        { signal },
      ),
  });

  pi.registerTool({
    name: "propose_purpose_edit",
    label: "Propose a channel purpose",
    description: `Propose a new purpose text for a channel (what it is for; later runs there read it). ${OUTCOMES}`,
    parameters: Type.Object({
      channel_id: channelId,
      purpose: text("the whole new purpose text"),
      rationale: rationale(true),
    }),
    execute: (_id, params, signal) =>
      propose(
        "propose_purpose_edit",
        INTENTS.propose_purpose_edit,
        { channel_id: params.channel_id, purpose: params.purpose },
        params.rationale,
        { signal },
      ),
  });

  pi.registerTool({
    name: "check_gates",
    label: "Check gates",
    description:
      "List your proposals held for a human (gates) with their state, and your recent journal " +
      "(what became of each proposal, with any note from the person who decided).",
    parameters: Type.Object({}),
    execute: (_id, _params, signal) => gatesReport({ signal }),
  });
}

/** How a task run reports its end: registered only in a task run. */
function registerOutcomeTools(pi: ExtensionAPI): void {
  const note = Type.String({ minLength: 1, maxLength: 4000, description: "one or two sentences" });
  pi.registerTool({
    name: "task_complete",
    label: "Task complete",
    description: "Report that this run's task is done, with a short note on what was achieved.",
    parameters: Type.Object({ note }),
    execute: (_id, params, signal) =>
      noTask() ?? reportOutcome("completed", params.note, { signal }),
  });
  pi.registerTool({
    name: "task_fail",
    label: "Task failed",
    description:
      "Report that this run's task can't be done, with a short note on why and what would unblock it.",
    parameters: Type.Object({ note }),
    execute: (_id, params, signal) => noTask() ?? reportOutcome("failed", params.note, { signal }),
  });
}

/** A run that is not a task's has nothing to report on (a ready box's tools outlive its choice). */
function noTask(): Promise<never> | undefined {
  return process.env.ROSTER_TASK_ID
    ? undefined
    : Promise.reject(new Error("this run is not a task's: there is no outcome to report"));
}

// every tool call runs guarded: an error its work raises later ends that call, not the run
export default guarded("proposals", loadActions);
