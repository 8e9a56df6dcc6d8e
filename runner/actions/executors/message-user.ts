import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import type { Executor } from "./executor.ts";

/**
 * message-user: a note from the worker to its operator. Until a chat listener
 * is configured, it lands in the local inbox (audit/messages.jsonl, one line
 * per message, read with `roster inbox`).
 */
const Payload = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: 20_000 }) },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export function inboxFile(auditDir: string): string {
  return join(auditDir, "messages.jsonl");
}

export const messageUser: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `message to you: ${oneLine(payload.text, 80)}`,
  render: (payload) => payload.text,
  async run(payload, context) {
    mkdirSync(context.paths.audit, { recursive: true, mode: 0o700 });
    const fd = openSync(inboxFile(context.paths.audit), "a", 0o600);
    try {
      const line = {
        ts: new Date().toISOString(),
        worker: context.worker,
        key: context.key,
        text: payload.text,
      };
      writeSync(fd, `${JSON.stringify(line)}\n`);
    } finally {
      closeSync(fd);
    }
    return { delivered: "inbox" };
  },
};

export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
