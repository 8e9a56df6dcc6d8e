/**
 * What `roster channel ls | show` print: every channel with its designation and
 * activity, or one channel's purpose and latest messages, as a table or JSON.
 * The CLI only declares these commands; this module is loaded when one runs.
 */

import type { RosterPaths } from "../../ground/config/paths.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { columns } from "../../ground/text/table.ts";
import type { Designation, Designations } from "../../records/channels/designations.ts";
import type { MessageRecord } from "../../records/channels/store.ts";

const trustedText = (designation: Designation) =>
  `${designation.trusted ? "yes" : "no"}${
    designation.trustedBy === "default"
      ? " (default)"
      : designation.trustedBy === "unreadable"
        ? " (settings unreadable)"
        : ""
  }`;

const modeText = (designation: Designation) =>
  `${designation.mode}${designation.modeBy === "default" ? " (default)" : ""}`;

const when = (ts: string | undefined) => (ts ? ts.slice(0, 16).replace("T", " ") : "-");

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

function designationJson(designation: Designation) {
  return {
    id: designation.id,
    trusted: designation.trusted,
    trusted_by: designation.trustedBy,
    mode: designation.mode,
    mode_by: designation.modeBy,
  };
}

/** Said on stderr so the table stays clean: why nothing shows as trusted. */
function warnUnreadable(designations: Designations, file: string): void {
  if (designations.unreadable !== undefined)
    process.stderr.write(
      `roster: ${file} can't be read (${designations.unreadable}); no channel is trusted\n`,
    );
}

/** `roster channel ls`: every channel, and the bots listening, as a table or one JSON object a line. */
export async function listChannelsCommand(flags: { json?: boolean }): Promise<void> {
  const paths = rosterPaths();
  const { isChannelId } = await import("../../records/channels/ids.ts");
  const { listChannels, readMessages } = await import("../../records/channels/store.ts");
  const { designationOf, readDesignations, settingsFile } = await import(
    "../../records/channels/designations.ts"
  );
  const designations = readDesignations(paths);
  warnUnreadable(designations, settingsFile(paths));
  // a channel the operator designated before anyone spoke there is listed too
  const named = [...designations.trusted, ...designations.untrusted, ...designations.modes.keys()];
  const ids = [...new Set([...listChannels(paths), ...named.filter(isChannelId)])].sort();
  const rows = ids.map((id) => {
    const messages = readMessages(paths, id);
    return {
      designation: designationOf(designations, id),
      messages: messages.length,
      last: messages.at(-1)?.ts,
    };
  });
  if (flags.json) {
    for (const row of rows)
      process.stdout.write(
        `${JSON.stringify({ ...designationJson(row.designation), messages: row.messages, last_ts: row.last ?? null })}\n`,
      );
    return;
  }
  process.stdout.write(await botsSection(paths));
  if (!rows.length) {
    process.stdout.write("no channels\n");
    return;
  }
  const header = ["ID", "TRUSTED", "MODE", "MESSAGES", "LAST"];
  const body = rows.map((row) => [
    row.designation.id,
    trustedText(row.designation),
    modeText(row.designation),
    String(row.messages),
    when(row.last),
  ]);
  process.stdout.write(`${columns([header, ...body])}\n`);
}

/** `roster channel show`: one channel's designation, purpose and latest messages. */
export async function showChannelCommand(
  id: string,
  flags: { json?: boolean; last: string },
): Promise<void> {
  const paths = rosterPaths();
  const { RosterError } = await import("../../ground/errors.ts");
  const { assertChannelId } = await import("../../records/channels/ids.ts");
  const { listChannels, readMessages, readPurpose } = await import(
    "../../records/channels/store.ts"
  );
  const { designationOf, readDesignations, settingsFile } = await import(
    "../../records/channels/designations.ts"
  );
  assertChannelId(id);
  const last = Number(flags.last);
  if (!Number.isInteger(last) || last < 0)
    throw new RosterError(`--last ${flags.last}: a whole number of messages, 0 or more`, {
      exitCode: 2,
    });
  const designations = readDesignations(paths);
  const known =
    listChannels(paths).includes(id) ||
    designations.trusted.has(id) ||
    designations.untrusted.has(id) ||
    designations.modes.has(id);
  if (!known)
    throw new RosterError(`no channel "${id}"`, {
      exitCode: 2,
      hint: "`roster channel ls` lists them",
    });
  warnUnreadable(designations, settingsFile(paths));
  const designation = designationOf(designations, id);
  const purpose = readPurpose(paths, id);
  const messages: MessageRecord[] = readMessages(paths, id, { last });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ ...designationJson(designation), purpose: purpose ?? null, messages }, null, 2)}\n`,
    );
    return;
  }
  const lines = [
    `channel   ${id}`,
    `trusted   ${trustedText(designation)}`,
    `mode      ${modeText(designation)}`,
    "",
    purpose ? purpose.trimEnd() : "(no purpose.md)",
    "",
    ...(messages.length
      ? messages.map(
          (message) =>
            `${message.ts.slice(0, 19)}Z ${message.author} (${message.role}): ${oneLine(message.content)}`,
        )
      : ["no messages"]),
    "",
  ];
  process.stdout.write(lines.join("\n"));
}

/** The bots bound in worker.toml files, and how each listener is doing (while a server runs). */
async function botsSection(paths: RosterPaths): Promise<string> {
  const { loadConfig } = await import("../../ground/config/load.ts");
  const { botBindings } = await import("../../ground/config/bot-bindings.ts");
  const { readServerState } = await import("../../services/server/state.ts");
  const { readListenerStatuses } = await import("../../services/listeners/supervisor.ts");
  const bindings = botBindings(loadConfig(paths.config, { vaultDir: paths.vault }).workers);
  if (!bindings.length) return "";
  const running = readServerState(paths) !== undefined;
  const statuses = running ? readListenerStatuses(paths) : [];
  const lines = bindings.map((binding) => {
    const status = statuses.find(
      (s) => s.worker === binding.worker && s.platform === binding.platform,
    );
    const state = !running
      ? "not listening (no server running)"
      : status
        ? `${status.state} since ${status.since}${status.detail ? ` (${status.detail})` : ""}${status.last_event ? `, last event ${status.last_event}` : ""}`
        : "not listening (server started with --no-listen?)";
    return `  ${binding.worker} on ${binding.platform} (bot "${binding.credential}"): ${state}`;
  });
  return `bots:\n${lines.join("\n")}\n\n`;
}
