/**
 * Block Kit for the Slack stand-in (slack-stand-in.ts): a message's `blocks`
 * as chat.postMessage, chat.update and a response_url take them — a JSON
 * string (WebClient sends every field form-encoded) or an array in a JSON
 * body — stored the way Slack stores them: a block_id on every block and an
 * action_id on every interactive element the sender left them off, and
 * `emoji: true` on plain_text unless set. What Slack refuses comes back as its
 * invalid_blocks_format, or invalid_blocks with the reason and a JSON pointer
 * in `errors` and `response_metadata.messages`. The checks cover what an
 * offer with buttons can get wrong, not all of Block Kit.
 */
import { randomBytes } from "node:crypto";

/** A stored block: whatever Block Kit fields it has, with its type and block_id. */
export type SlackBlock = Record<string, unknown> & { type: string; block_id: string };

/** Slack's answer refusing the blocks. */
export type BlocksRefusal = {
  ok: false;
  error: string;
  errors?: string[];
  response_metadata?: { messages: string[] };
};

/** Slack's limits: blocks per message, elements per actions block, and string lengths. */
const MAX_BLOCKS = 50;
const MAX_ELEMENTS = 25;
const MAX_ID = 255;
const MAX_SECTION_TEXT = 3000;
const MAX_BUTTON_TEXT = 75;
const MAX_VALUE = 2000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Slack's generated ids are short mixed-case alphanumerics. */
function generatedId(length: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join("");
}

class Refused extends Error {}

function refuse(reason: string, pointer: string): never {
  throw new Refused(`${reason} [json-pointer:${pointer}]`);
}

/** A text object as stored; plain_text gains Slack's default `emoji: true`. */
function textObject(value: unknown, pointer: string, max: number): Record<string, unknown> {
  if (!isRecord(value) || (value.type !== "plain_text" && value.type !== "mrkdwn")) {
    refuse("must provide an object", pointer);
  }
  if (typeof value.text !== "string" || !value.text)
    refuse("must be more than 0 characters", `${pointer}/text`);
  if (value.text.length > max) refuse(`must be less than ${max + 1} characters`, `${pointer}/text`);
  return value.type === "plain_text" && value.emoji === undefined
    ? { ...value, emoji: true }
    : value;
}

/** An interactive element as stored, its action_id given or generated. */
function element(value: unknown, pointer: string, actionIds: Set<string>): Record<string, unknown> {
  if (!isRecord(value) || typeof value.type !== "string")
    refuse("missing required field: type", pointer);
  const given = value.action_id;
  if (given !== undefined && (typeof given !== "string" || !given || given.length > MAX_ID)) {
    refuse(`must be less than ${MAX_ID + 1} characters`, `${pointer}/action_id`);
  }
  const actionId = typeof given === "string" ? given : generatedId(5);
  if (actionIds.has(actionId)) refuse("action_id already exists", `${pointer}/action_id`);
  actionIds.add(actionId);
  const stored: Record<string, unknown> = { ...value, action_id: actionId };
  if (value.type !== "button") return stored;
  const text = textObject(value.text, `${pointer}/text`, MAX_BUTTON_TEXT);
  if (text.type !== "plain_text") refuse("must be a plain_text text object", `${pointer}/text`);
  stored.text = text;
  if (
    value.value !== undefined &&
    (typeof value.value !== "string" || value.value.length > MAX_VALUE)
  ) {
    refuse(`must be less than ${MAX_VALUE + 1} characters`, `${pointer}/value`);
  }
  if (value.style !== undefined && value.style !== "primary" && value.style !== "danger") {
    refuse("must be one of: primary, danger", `${pointer}/style`);
  }
  return stored;
}

function block(
  value: unknown,
  n: number,
  blockIds: Set<string>,
  actionIds: Set<string>,
): SlackBlock {
  const pointer = `/blocks/${n}`;
  if (!isRecord(value) || typeof value.type !== "string")
    refuse("missing required field: type", pointer);
  const given = value.block_id;
  if (given !== undefined && (typeof given !== "string" || !given || given.length > MAX_ID)) {
    refuse(`must be less than ${MAX_ID + 1} characters`, `${pointer}/block_id`);
  }
  const blockId = typeof given === "string" ? given : generatedId(5);
  if (blockIds.has(blockId)) refuse("block_id already exists", `${pointer}/block_id`);
  blockIds.add(blockId);
  const stored: SlackBlock = { ...value, type: value.type, block_id: blockId };
  if (value.type === "section") {
    if (value.text !== undefined)
      stored.text = textObject(value.text, `${pointer}/text`, MAX_SECTION_TEXT);
    if (value.accessory !== undefined)
      stored.accessory = element(value.accessory, `${pointer}/accessory`, actionIds);
  } else if (value.type === "actions") {
    const elements = value.elements;
    if (!Array.isArray(elements) || elements.length === 0)
      refuse("must provide at least 1 items", `${pointer}/elements`);
    if (elements.length > MAX_ELEMENTS)
      refuse(`no more than ${MAX_ELEMENTS} items allowed`, `${pointer}/elements`);
    stored.elements = elements.map((item, e) =>
      element(item, `${pointer}/elements/${e}`, actionIds),
    );
  }
  return stored;
}

/**
 * A body's `blocks` as Slack stores them, or its refusal. Absent means none;
 * callers that keep a message's blocks when a body leaves them out check
 * for absence themselves.
 */
export function readBlocks(raw: unknown): SlackBlock[] | BlocksRefusal {
  if (raw === undefined || raw === "") return [];
  let parsed: unknown = raw;
  if (typeof raw === "string") {
    try {
      parsed = JSON.parse(raw);
    } catch {
      return { ok: false, error: "invalid_blocks_format" };
    }
  }
  if (!Array.isArray(parsed)) return { ok: false, error: "invalid_blocks_format" };
  try {
    if (parsed.length > MAX_BLOCKS) refuse(`no more than ${MAX_BLOCKS} items allowed`, "/blocks");
    const blockIds = new Set<string>();
    const actionIds = new Set<string>();
    return parsed.map((value, n) => block(value, n, blockIds, actionIds));
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    return {
      ok: false,
      error: "invalid_blocks",
      errors: [error.message],
      response_metadata: { messages: [`[ERROR] ${error.message}`] },
    };
  }
}

/** The interactive element with this action_id in stored blocks, and the block it sits in. */
export function elementOf(
  blocks: readonly SlackBlock[],
  actionId: string,
): { block_id: string; element: Record<string, unknown> } | undefined {
  for (const stored of blocks) {
    const candidates = [
      ...(Array.isArray(stored.elements) ? stored.elements : []),
      ...(stored.accessory === undefined ? [] : [stored.accessory]),
    ];
    const found = candidates.find((item) => isRecord(item) && item.action_id === actionId);
    if (isRecord(found)) return { block_id: stored.block_id, element: found };
  }
  return undefined;
}
