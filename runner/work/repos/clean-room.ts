import type { RepoPolicy } from "../../ground/config/connections.ts";
import { KNOWLEDGE_REPO } from "../../ground/config/knowledge.ts";
import { git } from "../../ground/git/git.ts";
import { COMMON_WORDS } from "../../ground/text/common-words.ts";
import { carriesConversation, type Participant, type RunContext } from "./provenance.ts";

/**
 * The clean-room rule. What people say in a conversation stays out of shared
 * work unless the operator lets it in: a run that carried conversation content
 * (its run-context.json names a channel) may push only to a repo whose
 * connection says `write_from = "any-run"`; every other repo keeps the rule by default
 * and refuses it. A push such a run may make is still scanned for the people
 * of its conversations — their display names and handles as the channel
 * records keep them — in every file it adds or changes, every path and every
 * commit message, and refused when it names one. The worker's own knowledge
 * repo follows org.toml `[knowledge] write_from` (clean-room unless "any-run"),
 * and is not scanned: a clean run has no participants to name.
 */
export const CLEAN_ROOM = "clean-room rule";

/** Why a run may not push to this repo at all, or undefined. */
export function cleanRoomRefusal(
  repo: string,
  policy: Pick<RepoPolicy, "writeFrom">,
  context: Pick<RunContext, "channels">,
): string | undefined {
  if (policy.writeFrom === "any" || !carriesConversation(context)) return undefined;
  const shown = context.channels.slice(0, 3).join(", ");
  const more = context.channels.length > 3 ? ` and ${context.channels.length - 3} more` : "";
  if (repo === KNOWLEDGE_REPO)
    return `refused by the ${CLEAN_ROOM}: this run carried conversation content (${shown}${more}) and your knowledge repo takes pushes only from runs that carried none (org.toml [knowledge] write_from = "clean-room"); keep what this conversation taught you in its channel's ~/channel/store, or make the note from a run without conversation`;
  return `refused by the ${CLEAN_ROOM}: this run carried conversation content (${shown}${more}) and "${repo}" takes pushes only from runs that carried none (write_from = "clean-room"); make the change from a run without conversation (a one-shot run, or a task not filed from a chat), keep it in your own knowledge repo, or ask the operator for write_from = "any-run" on this connection`;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The words a participant is named by: display name and handle, each at
 * least two characters. A display name that is a common word (ground/text/
 * common-words.ts) is not one: anyone in a room may call themselves "the",
 * and every text would name them. Their handle, which the platform gives,
 * still counts.
 */
function termsOf(people: readonly Participant[]): string[] {
  const terms = new Set<string>();
  for (const person of people) {
    const name = person.name.trim().toLowerCase();
    if (name.length >= 2 && !COMMON_WORDS.has(name)) terms.add(name);
    const handle = person.handle.trim().toLowerCase();
    if (handle.length >= 2) terms.add(handle);
  }
  return [...terms];
}

/**
 * A matcher for the participants' names as whole words (no letter, digit or
 * underscore on either side), case-insensitive: "Ann" names Ann in "ask Ann",
 * not in "annual".
 */
export function participantMatcher(
  people: readonly Participant[],
): (text: string) => string | undefined {
  const terms = termsOf(people).sort((a, b) => b.length - a.length);
  if (!terms.length) return () => undefined;
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_])(${terms.map(escapeRegExp).join("|")})(?![\\p{L}\\p{N}_])`,
    "iu",
  );
  return (text) => pattern.exec(text)?.[1];
}

/**
 * Where a push names a participant: in a line any of its commits adds (so a
 * name added and taken out again, which still lands in history, counts; a
 * line already on the branch does not), a path, or a commit message. Each
 * finding says the file and line, or the commit, and whom it names (the run
 * already knows them; the refusal must say what to take out).
 */
export async function participantFindings(options: {
  dir: string;
  base: string;
  head: string;
  paths: readonly string[];
  people: readonly Participant[];
  maxBytes: number;
}): Promise<string[]> {
  const match = participantMatcher(options.people);
  const findings: string[] = [];
  for (const path of new Set(options.paths)) {
    const named = match(path);
    if (named) findings.push(`the path ${JSON.stringify(path)} names ${named}`);
  }
  const range = `${options.base}..${options.head}`;
  const patch = await git(
    options.dir,
    [
      "-c",
      "core.quotePath=false",
      "log",
      "-p",
      "-U0",
      "--format=%x01%H",
      "--no-renames",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      range,
    ],
    { maxBytes: options.maxBytes * 2 + 1024 * 1024 },
  );
  const reported = new Set<string>();
  let path = "";
  let line = 0;
  // a file's header runs from "diff --git" to its first hunk: only there is "+++ " a path
  let header = false;
  for (const text of patch.split("\n")) {
    if (text.startsWith("diff --git ")) header = true;
    else if (header && text.startsWith("+++ ")) path = text.replace(/^\+\+\+ (b\/)?/, "");
    else if (text.startsWith("@@ ")) {
      header = false;
      line = Number(/\+(\d+)/.exec(text)?.[1] ?? 0);
    } else if (!header && text.startsWith("+")) {
      const named = match(text.slice(1));
      if (named && !reported.has(path)) {
        reported.add(path);
        findings.push(`${JSON.stringify(path)} line ${line} names ${named}`);
      }
      line++;
    }
  }
  const log = await git(options.dir, ["log", "--format=%H%x00%B%x00", range]);
  const parts = log.split("\0");
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const named = match(parts[i + 1] ?? "");
    if (named) findings.push(`commit ${parts[i]?.trim().slice(0, 12)}'s message names ${named}`);
  }
  return findings.map((finding) => `${finding}, a participant of this run's conversations`);
}
