/**
 * What `roster channel ls | show` print: every channel with its designation and
 * activity, or one channel's purpose and latest messages, as a table or JSON.
 * The CLI only declares these commands; this module is loaded when one runs.
 */

import type { RosterPaths } from "../../ground/config/paths.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { columns } from "../../ground/text/table.ts";
import {
  type Designation,
  type Designations,
  designationOf,
  trustOf,
} from "../../records/channels/designations.ts";
import type { LinkGroup } from "../../records/channels/links.ts";
import type { MessageRecord } from "../../records/channels/store.ts";

const trustedText = (designation: Designation) =>
  `${designation.trusted ? "yes" : "no"}${
    designation.trustedBy === "default"
      ? " (default)"
      : designation.trustedBy === "unreadable"
        ? " (settings unreadable)"
        : designation.trustedBy === "link"
          ? " (linked: shared)"
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

/** A channel's link, in words: a linked channel's members, or the channel a member is in. */
function linkedText(group: LinkGroup | undefined, id: string): string {
  if (!group) return "-";
  if (group.name === id) return `${group.surfaces.join(", ") || "(no members)"}`;
  if (group.name) return `in ${group.name}`;
  return `with ${group.surfaces.filter((one) => one !== id).join(", ")}`;
}

function linkJson(group: LinkGroup | undefined) {
  return group ? { name: group.name ?? null, surfaces: group.surfaces } : null;
}

/** Said on stderr so the table stays clean: why nothing shows as trusted. */
function warnUnreadable(designations: Designations, file: string): void {
  if (designations.unreadable !== undefined)
    process.stderr.write(
      `roster: ${file} can't be read (${designations.unreadable}); no channel is trusted\n`,
    );
}

/**
 * A channel's designation with its trust as a decision reads it: a linked
 * channel's trust is shared (records/channels/designations.ts trustOf).
 */
function standingOf(
  paths: RosterPaths,
  designations: Designations,
  id: string,
  group: LinkGroup | undefined,
): Designation {
  const designation = designationOf(designations, id);
  const trusted = trustOf(paths, designations, id);
  return trusted === designation.trusted && group?.name !== id
    ? designation
    : { ...designation, trusted, trustedBy: "link" };
}

/** `roster channel ls`: every channel, and the bots listening, as a table or one JSON object a line. */
export async function listChannelsCommand(flags: { json?: boolean }): Promise<void> {
  const paths = rosterPaths();
  const { isChannelId } = await import("../../records/channels/ids.ts");
  const { listChannels, readMessages } = await import("../../records/channels/store.ts");
  const { readDesignations, settingsFile } = await import("../../records/channels/designations.ts");
  const { linkGroups } = await import("../../records/channels/links.ts");
  const designations = readDesignations(paths);
  warnUnreadable(designations, settingsFile(paths));
  const groups = linkGroups(paths);
  const groupFor = (id: string) =>
    groups.find((group) => group.name === id || group.surfaces.includes(id));
  // a channel the operator designated or linked before anyone spoke there is listed too
  const named = [
    ...designations.trusted,
    ...designations.untrusted,
    ...designations.modes.keys(),
    ...groups.flatMap((group) => [...(group.name ? [group.name] : []), ...group.surfaces]),
  ];
  const ids = [...new Set([...listChannels(paths), ...named.filter(isChannelId)])].sort();
  const rows = ids.map((id) => {
    const messages = readMessages(paths, id);
    const group = groupFor(id);
    return {
      designation: standingOf(paths, designations, id, group),
      group,
      messages: messages.length,
      last: messages.at(-1)?.ts,
    };
  });
  if (flags.json) {
    for (const row of rows)
      process.stdout.write(
        `${JSON.stringify({ ...designationJson(row.designation), linked: linkJson(row.group), messages: row.messages, last_ts: row.last ?? null })}\n`,
      );
    return;
  }
  process.stdout.write(await botsSection(paths));
  if (!rows.length) {
    process.stdout.write("no channels\n");
    return;
  }
  const header = ["ID", "TRUSTED", "MODE", "LINKED", "MESSAGES", "LAST"];
  const body = rows.map((row) => [
    row.designation.id,
    trustedText(row.designation),
    modeText(row.designation),
    linkedText(row.group, row.designation.id),
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
  const { readDesignations, settingsFile } = await import("../../records/channels/designations.ts");
  const { groupOf } = await import("../../records/channels/links.ts");
  assertChannelId(id);
  const last = Number(flags.last);
  if (!Number.isInteger(last) || last < 0)
    throw new RosterError(`--last ${flags.last}: a whole number of messages, 0 or more`, {
      exitCode: 2,
    });
  const designations = readDesignations(paths);
  const group = groupOf(paths, id);
  const known =
    group !== undefined ||
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
  const designation = standingOf(paths, designations, id, group);
  const purpose = readPurpose(paths, id);
  const messages: MessageRecord[] = readMessages(paths, id, { last });
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ ...designationJson(designation), linked: linkJson(group), purpose: purpose ?? null, messages }, null, 2)}\n`,
    );
    return;
  }
  const lines = [
    `channel   ${id}`,
    `trusted   ${trustedText(designation)}`,
    `mode      ${modeText(designation)}`,
    ...(group
      ? [
          group.name === id
            ? `linked    ${id} is one channel of ${group.surfaces.join(" + ") || "(no members now)"}`
            : `linked    ${linkedText(group, id)}${group.name ? ` (its conversation: roster channel show ${group.name})` : ""}`,
        ]
      : []),
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
