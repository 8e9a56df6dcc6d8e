import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { appendJsonLine } from "../../../ground/files/append-line.ts";
import { oneLine } from "../../../ground/text/message-parts.ts";
import type { Executor } from "../../executor.ts";
import { TERM_PREFIX } from "./ids.ts";

/**
 * term: a message from the worker into a terminal channel's history
 * (data/channels/<id>/messages.jsonl, one JSON line per message, the record
 * `roster talk` reads back), appended in one write so lines never tear.
 */
const Payload = Type.Object(
  {
    channel_id: Type.String({ pattern: `^${TERM_PREFIX}[A-Za-z0-9_-]{1,64}$` }),
    text: Type.String({ minLength: 1, maxLength: 40_000 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export const term: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `to terminal ${payload.channel_id}: ${oneLine(payload.text, 70)}`,
  render: (payload) => `To: terminal channel ${payload.channel_id}\n\n${payload.text}`,
  async run(payload, context) {
    const record = {
      ts: new Date().toISOString(),
      author_id: `worker:${context.worker}`,
      author: context.worker,
      role: "worker",
      content: payload.text,
      attachments: [],
    };
    const history = join(context.paths.data, "channels", payload.channel_id, "messages.jsonl");
    appendJsonLine(history, record, { file: 0o644, dir: 0o755 });
    return { delivered: "terminal", channel_id: payload.channel_id };
  },
};
